#include "cli.hpp"

#include <limits>
#include <set>
#include <string_view>

namespace attendre::replay {
namespace {

using cli::nonempty_path;
using cli::parse_count;
using cli::parse_number;
using cli::usage;

// Both memories count the rows they hold plus one chunk's insertion in 32
// bits (the GPU's buffers and dispatches index them so), so N + S and M + S
// must fit; past that, sums wrap around into small, wrong sizes.
void check_row_counts(const Options& o) {
  constexpr uint64_t kMaxRows = std::numeric_limits<uint32_t>::max();
  const auto check = [&](const char* flag, uint32_t value, const char* symbol) {
    const uint64_t sum = uint64_t{value} + o.chunk;
    if (sum <= kMaxRows) return;
    // The larger term is the one to lower.
    const bool blame_chunk = o.chunk > value;
    const std::string culprit = blame_chunk ? "--chunk " + std::to_string(o.chunk)
                                            : std::string(flag) + " " + std::to_string(value);
    usage(culprit + ": " + symbol + " + S = " + std::to_string(value) + " + " + std::to_string(o.chunk) + " = " +
          std::to_string(sum) + " rows, more than the layer counts in 32 bits (at most " +
          std::to_string(kMaxRows) + "); lower " + (blame_chunk ? "--chunk" : flag));
  };
  check("--q-capacity", o.q_capacity, "N");
  check("--kv-capacity", o.kv_capacity, "M");
}

}  // namespace

Options parse_args(std::span<const std::string> args) {
  Options o;
  const auto path = cli::path_option;
  const auto count = cli::count_option;
  const auto flag = cli::switch_option;
  auto optional_path = [](std::optional<std::string>& target) {
    return cli::Option{true, false, [&target](const std::string& f, const std::string& v) { target = nonempty_path(f, v); }};
  };
  auto number = [](std::optional<double>& target, bool non_negative) {
    return cli::Option{true, false, [&target, non_negative](const std::string& f, const std::string& v) {
                         target = parse_number(f, v, non_negative);
                       }};
  };

  const cli::OptionTable specs = {
      {"--q", path(o.q_path)},
      {"--k", path(o.k_path)},
      {"--v", path(o.v_path)},
      {"--valid", optional_path(o.valid_path)},
      {"--positions", optional_path(o.positions_path)},
      {"--tags", optional_path(o.tags_path)},
      {"--out", path(o.out_dir)},
      {"--chunk", count(o.chunk, true)},
      {"--q-capacity", count(o.q_capacity, false)},
      {"--kv-capacity", count(o.kv_capacity, true)},
      {"--top-k", count(o.top_k, true)},
      {"--sinks", count(o.sinks, false)},
      {"--recent", count(o.recent, false)},
      {"--lambda", number(o.lambda, true)},
      {"--init-k", number(o.init_k, false)},
      {"--init-const", number(o.init_const, false)},
      {"--scale", number(o.scale, false)},
      {"--no-protect-new", flag(o.protect_new, false)},
      {"--causal", flag(o.causal, true)},
      {"--alibi", flag(o.alibi, true)},
      {"--tag-mask", flag(o.tag_mask, true)},
      {"--verbose", flag(o.verbose, true)},
      {"--help", flag(o.help, true)},
      {"--policy", {true, false, [&o](const std::string& f, const std::string& v) {
                      const auto kind = parse_policy(v);
                      if (!kind)
                        usage(f + ": expected one of fifo, lru, lfu, lra_last, lra_max, lra_sum, lfa, got '" + v + "'");
                      o.policy = *kind;
                    }}},
      {"--device", {true, false, [&o](const std::string& f, const std::string& v) {
                      if (v != "cpu" && v != "gpu") usage(f + ": expected cpu or gpu, got '" + v + "'");
                      o.device = v == "cpu" ? Device::cpu : Device::gpu;
                    }}},
      {"--retrieval", {true, false, [&o](const std::string& f, const std::string& v) {
                         if (v != "per_head" && v != "shared") usage(f + ": expected per_head or shared, got '" + v + "'");
                         o.retrieval = v == "shared" ? RetrievalMode::shared : RetrievalMode::per_head;
                       }}},
  };

  const std::set<std::string> seen = cli::parse_options(specs, args);
  if (o.help) return o;

  for (const char* required :
       {"--q", "--k", "--v", "--chunk", "--q-capacity", "--kv-capacity", "--top-k", "--policy", "--out"})
    if (!seen.count(required)) usage(std::string("missing required option ") + required);
  // Options that would be silently ignored are refused: the user meant
  // something the chosen policy cannot do.
  const std::string policy = std::string(to_string(o.policy));
  if (o.lambda && o.policy != PolicyKind::lfa) usage("--lambda only applies to --policy lfa, not " + policy);
  const bool attention_scored = Policy{o.policy, 0.0, {}}.attention_scored();
  if (o.init_k && !attention_scored) usage("--init-k only applies to --policy lra_last|lra_max|lra_sum|lfa, not " + policy);
  if (o.init_const && !attention_scored)
    usage("--init-const only applies to --policy lra_last|lra_max|lra_sum|lfa, not " + policy);
  if (o.init_k && o.init_const) usage("--init-k and --init-const are exclusive");
  if (o.tag_mask && !o.tags_path) usage("--tag-mask needs --tags");
  check_row_counts(o);
  return o;
}

std::string help_text() {
  return R"(usage: attendre-replay --q q.npy --k k.npy --v v.npy [--valid valid.npy]
    [--positions positions.npy] --chunk S --q-capacity N --kv-capacity M
    --top-k K --policy fifo|lru|lfu|lra_last|lra_max|lra_sum|lfa
    [--lambda X] [--init-k X | --init-const X] [--sinks N] [--recent W]
    [--no-protect-new] [--causal] [--scale X] [--retrieval per_head|shared]
    [--alibi] [--tags tags.npy [--tag-mask]] [--device cpu|gpu] --out DIR

Replays one ATTENDRE layer over a recorded stream (memory-semantics spec,
section 6). Chunk t holds rows [t*S, (t+1)*S); the last chunk is padded with
invalid rows; drain steps follow until no valid query is pending.

inputs (.npy, little-endian, C order):
  --q FILE            float32 [T, H_q, D]
  --k FILE, --v FILE  float32 [T, H_kv, D]; H_q must be a multiple of H_kv
  --valid FILE        uint8 or bool [T], 0 or 1 (default: all rows valid)
  --positions FILE    int64 [T], strictly increasing over valid rows (default 0..T-1)
  --tags FILE         uint32 or int64 [T], values in [0, 2^32) (default: all 0)

layer:
  --chunk S           rows per step, >= 1
  --q-capacity N      Q memory capacity (output delay), >= 0, N + S < 2^32
  --kv-capacity M     K/V memory capacity, >= 1, M + S < 2^32
  --top-k K           entries retrieved per query and head, >= 1 (K >= M: full attention)
  --policy P          eviction policy: fifo, lru, lfu, lra_last, lra_max, lra_sum, lfa
  --lambda X          lfa decay per position, >= 0 (default 0); lfa only
  --init-k X          initial score mu - X*sigma (default X = 1); lra_* and lfa only
  --init-const X      constant initial score instead of mu - k*sigma; lra_* and lfa only
  --sinks N           positions < N are pinned, never evicted (default 0)
  --recent W          positions among the W most recent (p > newest - W) are
                      never evicted (default 0); needs M >= sinks + max(S, W),
                      or M >= sinks + W with --no-protect-new
  --no-protect-new    new entries may be evicted in the step that inserts them
  --causal            a query attends only to positions <= its own
  --scale X           logit scale (default 1/sqrt(D))
  --retrieval MODE    per_head (default) or shared top-K selection
  --alibi             add ALiBi position bias to the logits
  --tag-mask          a query attends only to entries with its tag (needs --tags)

run:
  --device cpu|gpu    cpu (the default): float64 reference, needs no GPU;
                      gpu: Vulkan path on the device ATTENDRE_DEVICE selects
                      (index or name substring; default: the best device)
  --out DIR           output folder, created if missing
  --verbose           the kernel variant of each family and the driver quirks
                      on stderr (gpu)
  --help, -h          this text

outputs in DIR, replaced together only when the whole replay succeeded (a
failed run leaves DIR as it was); a run whose files would not fit the free
space is refused before it starts:
  outputs.npy         float32 [T, H_q, D]: output of each row, NaN for invalid rows
  retained.npy        int64 [steps, M]: positions held at each step's retrieval,
                      ascending, -1 padded
  scores.npy          float64 [steps, M]: their scores after the step's update, NaN for -1

environment: ATTENDRE_DEVICE (see --device), ATTENDRE_VALIDATION=1 (Khronos
validation; any message fails the run), ATTENDRE_PORTABLE_LIMITS=1,
ATTENDRE_REPLAY_INJECT_FAILURE=write|replace|rename (tests: fail there as a
full or failing disk would).

exit status: 0 success; 1 bad input file, infeasible configuration or runtime
error; 2 command-line error; 3 Vulkan validation messages (gpu only).
)";
}

LayerConfig make_config(const Options& o, const AttentionShape& shape) {
  LayerConfig c;
  c.shape = shape;
  c.chunk = o.chunk;
  c.q_capacity = o.q_capacity;
  c.kv.capacity = o.kv_capacity;
  c.kv.policy.kind = o.policy;
  c.kv.policy.lambda = o.lambda.value_or(0.0);
  c.kv.policy.initial =
      o.init_const ? InitialScore::constant(*o.init_const) : InitialScore::mean_minus_sigma(o.init_k.value_or(1.0));
  c.kv.n_sink = o.sinks;
  c.kv.n_recent = o.recent;
  c.kv.protect_new = o.protect_new;
  c.retrieval.top_k = o.top_k;
  c.retrieval.mode = o.retrieval;
  c.retrieval.causal = o.causal;
  c.retrieval.tag_mask = o.tag_mask;
  c.retrieval.scale = o.scale;
  c.retrieval.bias = o.alibi ? BiasKind::alibi : BiasKind::none;
  return c;
}

}  // namespace attendre::replay
