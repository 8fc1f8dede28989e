#include "options.hpp"

#include "text_source.hpp"

#include "core/number_text.hpp"

#include <charconv>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <set>

namespace reader {
namespace {

[[noreturn]] void usage(const std::string& message) { throw UsageError(message); }

uint64_t parse_integer(const std::string& flag, const std::string& text, uint64_t lo, uint64_t hi) {
  uint64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || end != text.data() + text.size() || ec != std::errc{} || value < lo || value > hi)
    usage(flag + ": expected a whole number from " + std::to_string(lo) + " to " + std::to_string(hi) + ", got '" +
          text + "'");
  return value;
}

double parse_real(const std::string& flag, const std::string& text, double lo, double hi) {
  double value = 0.0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || end != text.data() + text.size() || ec != std::errc{} || !std::isfinite(value) || value < lo ||
      value > hi)
    usage(flag + ": expected a number from " + attendre::shortest_text(lo) + " to " + attendre::shortest_text(hi) + ", got '" + text + "'");
  return value;
}

std::vector<std::string> split_commas(const std::string& flag, const std::string& text) {
  std::vector<std::string> items;
  size_t start = 0;
  for (;;) {
    const size_t comma = text.find(',', start);
    items.push_back(text.substr(start, comma - start));
    if (items.back().empty()) usage(flag + ": empty item in '" + text + "'");
    if (comma == std::string::npos) return items;
    start = comma + 1;
  }
}

std::vector<uint32_t> parse_counts(const std::string& flag, const std::string& text, uint32_t lo) {
  std::vector<uint32_t> values;
  for (const std::string& item : split_commas(flag, text))
    values.push_back(static_cast<uint32_t>(parse_integer(flag, item, lo, std::numeric_limits<uint32_t>::max())));
  return values;
}

PolicyList parse_policies(const std::string& flag, const std::string& text) {
  PolicyList policies = split_commas(flag, text);
  for (const std::string& p : policies)
    if (!is_policy_name(p)) usage(flag + ": unknown policy '" + p + "' (policies: " + policy_names() + ")");
  return policies;
}

std::string nonempty(const std::string& flag, const std::string& text) {
  if (text.empty()) usage(flag + ": empty value");
  return text;
}

// Text that goes into the document, the JSON and the report must be UTF-8.
std::string utf8_text(const std::string& flag, const std::string& text) {
  const Utf8Prefix prefix = utf8_prefix(nonempty(flag, text));
  if (prefix.valid < text.size()) usage(flag + ": invalid UTF-8 at byte " + std::to_string(prefix.valid));
  return text;
}

}  // namespace

Options parse_options(const std::vector<std::string>& args) {
  Options o;
  std::optional<PolicyList> policy;
  std::optional<std::vector<PolicyList>> compare;
  bool haystack_flag = false, haystack_detail = false, answer_tokens_given = false;
  MemorySettings& m = o.memory;
  using attendre::cli::Option;
  const auto value = [](auto apply) { return Option{true, false, apply}; };
  const auto toggle = [](bool& target) { return attendre::cli::switch_option(target, true); };
  const auto path = [&](std::optional<std::string>& target) {
    return value([&target](const std::string& f, const std::string& v) { target = nonempty(f, v); });
  };
  const auto counts = [&](std::vector<uint32_t>& target, uint32_t lo) {
    return value([&target, lo](const std::string& f, const std::string& v) { target = parse_counts(f, v, lo); });
  };

  const attendre::cli::OptionTable flags = {
      {"--text", value([&](const std::string& f, const std::string& v) { o.text_path = nonempty(f, v); })},
      {"--haystack", toggle(haystack_flag)},
      {"--haystack-tokens", value([&](const std::string& f, const std::string& v) {
         o.haystack.tokens = static_cast<uint32_t>(parse_integer(f, v, 16, 10'000'000));
         haystack_detail = true;
       })},
      {"--needles", value([&](const std::string& f, const std::string& v) {
         o.haystack.needles = static_cast<uint32_t>(parse_integer(f, v, 1, kMaxNeedles));
         haystack_detail = true;
       })},
      {"--depths", value([&](const std::string& f, const std::string& v) {
         o.haystack.depths.clear();
         for (const std::string& d : split_commas(f, v)) o.haystack.depths.push_back(parse_real(f, d, 0.0, 1.0));
         if (o.haystack.depths.size() > kMaxNeedles) usage(f + ": at most " + std::to_string(kMaxNeedles) + " depths");
         haystack_detail = true;
       })},
      {"--seed", value([&](const std::string& f, const std::string& v) {
         o.haystack.seed = parse_integer(f, v, 0, std::numeric_limits<uint64_t>::max());
         haystack_detail = true;
       })},
      {"--question", value([&](const std::string& f, const std::string& v) { o.question = utf8_text(f, v); })},
      {"--template", value([&](const std::string& f, const std::string& v) { o.template_text = utf8_text(f, v); })},
      {"--model", path(o.model_path)},
      {"--lm-infinite", attendre::cli::lm_infinite_option(o.lm_infinite)},
      {"--answer-tokens", value([&](const std::string& f, const std::string& v) {
         o.answer_tokens = static_cast<uint32_t>(parse_integer(f, v, 1, 4096));
         answer_tokens_given = true;
       })},
      {"--chunk", value([&](const std::string& f, const std::string& v) {
         m.chunk = static_cast<uint32_t>(parse_integer(f, v, 1, 1u << 20));
       })},
      {"--q-capacity", counts(m.q_capacity, 0)},
      {"--kv-capacity", counts(m.kv_capacity, 1)},
      {"--top-k", counts(m.top_k, 1)},
      {"--sinks", counts(m.sinks, 0)},
      {"--recent", counts(m.recent, 0)},
      {"--policy", value([&](const std::string& f, const std::string& v) { policy = parse_policies(f, v); })},
      {"--compare", value([&](const std::string& f, const std::string& v) {
         compare.emplace();
         for (const std::string& p : parse_policies(f, v)) compare->push_back({p});
       })},
      {"--lambda", value([&](const std::string& f, const std::string& v) { m.lambda = parse_real(f, v, 0.0, 1e6); })},
      {"--init-k", value([&](const std::string& f, const std::string& v) { m.init_k = parse_real(f, v, -1e6, 1e6); })},
      {"--init-const", value([&](const std::string& f, const std::string& v) {
         m.init_const = parse_real(f, v, -1e30, 1e30);
       })},
      {"--flush", toggle(m.flush)},
      {"--fp16", toggle(m.fp16)},
      {"--fp16-memory", toggle(m.fp16_memory)},
      {"--fp16-activations", toggle(m.fp16_activations)},
      {"--device", value([&](const std::string& f, const std::string& v) { o.device = nonempty(f, v); })},
      {"--json", path(o.json_path)},
      {"--report", path(o.report_path)},
      {"--export-stream", path(o.export_dir)},
      {"--quiet", toggle(o.quiet)},
      {"--verbose", toggle(o.verbose)},
      {"--help", toggle(o.help)},  // and -h
  };

  attendre::cli::parse_options(flags, args);
  if (o.help) return o;

  if (!o.text_path.empty() && (haystack_flag || haystack_detail))
    usage("--text reads a file; --haystack and its options generate a document: choose one");
  o.input = !o.text_path.empty() ? InputKind::text : (haystack_flag || haystack_detail) ? InputKind::haystack : InputKind::builtin;
  if (answer_tokens_given && !o.model_path) usage("--answer-tokens needs --model: the lexical model does not answer");
  if (o.lm_infinite.enabled && !o.model_path)
    usage("--lm-infinite needs --model: the lexical model encodes no positions");
  if (o.export_dir && o.model_path)
    usage("--export-stream needs the lexical model: a GGUF model's first-block queries and keys come only out of the stack");
  if (o.memory.init_k && o.memory.init_const) usage("--init-k and --init-const both set the initial score: choose one");
  if (policy && compare) usage("--policy runs one configuration, --compare several: choose one");
  if (compare) o.runs = *compare;
  else if (policy) o.runs = {*policy};
  else
    for (const std::string& p : kDefaultComparison) o.runs.push_back({p});
  if (o.export_dir && o.runs.size() != 1) usage("--export-stream records one run's stream: give --policy, not a comparison");
  return o;
}

std::string help_text() {
  return R"(usage: attendre-reader [input] [memory] [output]

Reads a document through an ATTENDRE stack on the GPU, question first (the
paper's template, section 4), and shows what the memory kept: which
passages stay, and for a haystack whether each planted fact survived. Run
bare, it reads a built-in haystack under fifo, sinks, lra_sum and lfa.

input
  --text FILE          a UTF-8 file of any length, streamed from disk
  --haystack           a generated needle-in-a-haystack document (the default)
  --haystack-tokens T  its length in tokens (default 2400)
  --needles K          facts to plant, 1..12 (default 3)
  --depths D1,D2,...   where to plant them, fractions of the text in [0, 1]
                       (default: spread evenly, jittered by the seed)
  --seed N             the haystack's seed (default 1)
  --question TEXT      the question (default: the haystack's; for --text,
                       "What is this text about?")
  --template TEXT      default "Question: {question}\n\nContext: {context}\n\nAnswer:";
                       \n is a newline

model
  --model FILE.gguf    read with a GGUF model (llama, qwen2, qwen3, phi3)
                       and generate the answer greedily after the drain.
                       Without it, a lexical
                       model (hashed word embeddings, hand-written weights, no
                       learned ones; see apps/attendre-reader/README.md) reads.
  --answer-tokens T    tokens to generate (default 32; a stop token ends them
                       sooner).value_or_throw(); the answer shown is their first line
  --lm-infinite [N]    LM-Infinite (paper section 4): RoPE distances capped at
                       N (default: the model's trained context length)

memory (one value for every block, or a comma-separated value per block; the
defaults are the library's "reader" preset, printed with the configuration)
  --chunk S            positions per step (default 32)
  --q-capacity N       Q memory: how long each query waits (default 32)
  --kv-capacity M      K/V memory (default 256)
  --top-k K            keys each query retrieves (default 32; K >= M: all)
  --sinks N            pinned first positions (default 0)
  --recent W           the W most recent positions are never evicted
                       (default 0; needs M >= sinks + max(S, W))
  --policy P[,P...]    one policy for the stack, or one per block:
                       fifo, lru, lfu, lra_last, lra_max, lra_sum, lfa, or
                       sinks / streamingllm (fifo with 4 sinks: StreamingLLM),
                       tova (lra_last), h2o (lfa, lambda 0, a recent window
                       of --recent or W = (M - sinks) / 2)
  --compare P,P,...    one run per policy, one table (default:
                       fifo,sinks,lra_sum,lfa unless --policy is given)
  --lambda X           LFA's decay (default 0.001)
  --init-k X           initial score mu - X*sigma (default 1)
  --init-const X       a constant initial score instead
  --flush              finish by flushing each block instead of draining
  --fp16               fp16 weight storage
  --fp16-memory        K/V and Q memories in fp16 (half the bytes per entry)
  --fp16-activations   the rows the matrix products read in fp16 (math fp32; fp16
                       products over fp16 weights where shaderFloat16 is used)
  --device D           gpu (default: ATTENDRE_DEVICE or the best device), a
                       Vulkan device's index or name, or cpu (the float64
                       reference stack, no Vulkan)

output
  --json FILE          configuration, results per policy and the answer
                       (schema: apps/attendre-reader/SCHEMA.md)
  --report FILE        one self-contained HTML page: the retention map, the
                       question, needles and kept passages in the text
  --export-stream DIR  block 0's queries, keys and values (q.npy, k.npy,
                       v.npy) for attendre-replay (with --policy)
  --quiet              no progress line on stderr
  --verbose            the kernel variant of each family and the driver
                       quirks on stderr (gpu)
  --help, -h           this text

exit status: 0 success; 1 input, configuration, device or runtime error (one
line on stderr, no partial output files); 2 command-line error; 3 Vulkan
validation messages (ATTENDRE_VALIDATION=1).
)";
}

}  // namespace reader
