#include "memory_options.hpp"

#include <attendre/error.hpp>
#include <attendre/memory_names.hpp>

#include <algorithm>
#include <cstdint>
#include <sstream>

namespace attendre::cli {
namespace {

std::string memory_name_value(const std::string& flag, const std::string& text) {
  if (!is_memory_name(text))
    usage(flag + ": expected one of fifo, lru, lfu, lra_last, lra_max, lra_sum, lfa, got '" + text +
          "' (or an alias: " + memory_alias_names() + ")");
  return text;
}

// "3", "0-4" or "1,3-5" into inclusive ranges.
std::vector<std::pair<uint32_t, uint32_t>> parse_blocks(const std::string& flag, const std::string& text) {
  std::vector<std::pair<uint32_t, uint32_t>> ranges;
  std::stringstream list(text);
  for (std::string item; std::getline(list, item, ',');) {
    const size_t dash = item.find('-');
    const uint32_t first = parse_count(flag + " block", item.substr(0, dash), false);
    const uint32_t last = dash == std::string::npos ? first : parse_count(flag + " block", item.substr(dash + 1), false);
    if (last < first) usage(flag + ": block range '" + item + "' runs backwards");
    ranges.emplace_back(first, last);
  }
  if (ranges.empty()) usage(flag + ": expected blocks before ':', got '" + text + "'");
  return ranges;
}

// BLOCKS:NAME=VALUE[,NAME=VALUE...] with the names of the global flags.
BlockOverride parse_override(const std::string& flag, const std::string& text) {
  const size_t colon = text.find(':');
  if (colon == std::string::npos)
    usage(flag + ": expected BLOCKS:NAME=VALUE[,...] (e.g. 0-3:kv-capacity=256,policy=lfa), got '" + text + "'");
  BlockOverride o;
  o.text = text;
  o.ranges = parse_blocks(flag, text.substr(0, colon));
  const std::string fields = text.substr(colon + 1);
  Result<MemoryFields> parsed = parse_memory_fields(fields);
  if (!parsed.ok()) {
    const std::string& message = parsed.status().message();
    if (message == "no setting") usage(flag + ": no setting after ':' in '" + text + "'");
    // "kv-capacity: expected ..." reads "--layer kv-capacity: ...", the others "--layer: ...".
    const bool names_field = message.find(": ") < message.find(' ');
    usage(flag + (names_field ? " " : ": ") + message);
  }
  o.fields = std::move(parsed).value();
  return o;
}

template <class T>
Option value_option(std::optional<T>& target, std::function<T(const std::string&, const std::string&)> parse) {
  return {true, false, [&target, parse](const std::string& f, const std::string& v) { target = parse(f, v); }};
}

}  // namespace

NamedSetting parse_setting(const std::string& flag, const std::string& name) {
  NamedSetting s{name, name == "full"};
  if (!s.full && !is_memory_name(name))
    usage(flag + ": expected full, sinks or a policy (fifo, lru, lfu, lra_last, lra_max, lra_sum, lfa), got '" + name +
          "' (other aliases: streamingllm, tova, h2o)");
  return s;
}

void MemoryOptions::add_to(OptionTable& table) {
  const auto count = [](std::optional<uint32_t>& target, bool positive) {
    return value_option<uint32_t>(target, [positive](const std::string& f, const std::string& v) {
      return parse_count(f, v, positive);
    });
  };
  const auto number = [](std::optional<double>& target, bool non_negative) {
    return value_option<double>(target, [non_negative](const std::string& f, const std::string& v) {
      return parse_number(f, v, non_negative);
    });
  };
  table["--chunk"] = count(chunk_, true);
  table["--q-capacity"] = count(fields_.q_capacity, false);
  table["--kv-capacity"] = count(fields_.kv_capacity, true);
  table["--top-k"] = count(fields_.top_k, true);
  table["--sinks"] = count(fields_.sinks, false);
  table["--recent"] = count(fields_.recent, false);
  table["--policy"] = value_option<std::string>(policy_, memory_name_value);
  table["--lambda"] = number(fields_.lambda, true);
  table["--init-k"] = number(fields_.init_k, false);
  table["--retrieval"] = value_option<RetrievalMode>(retrieval_, [](const std::string& f, const std::string& v) {
    if (v != "per_head" && v != "shared") usage(f + ": expected per_head or shared, got '" + v + "'");
    return v == "shared" ? RetrievalMode::shared : RetrievalMode::per_head;
  });
  table["--no-protect-new"] = switch_option(protect_new_, false);
  table["--fp16-memory"] = switch_option(fp16_memory_, true);
  table["--fp16-activations"] = {false, false, [this](const std::string&, const std::string&) { fp16_activations_ = true; }};
  table["--fp32-activations"] = {false, false, [this](const std::string&, const std::string&) { fp16_activations_ = false; }};
  table["--causal"] = {false, false, [this](const std::string&, const std::string&) { causal_ = true; }};
  table["--no-causal"] = {false, false, [this](const std::string&, const std::string&) { causal_ = false; }};
  table["--lm-infinite"] = lm_infinite_option(lm_infinite_);
  table["--flush"] = switch_option(flush_, true);
  table["--full-context"] = switch_option(full_context_, true);
  table["--layer"] = {true, true, [this](const std::string& f, const std::string& v) {
                        overrides_.push_back(parse_override(f, v));
                      }};
}

void MemoryOptions::check(const std::set<std::string>& seen, bool causal_only, bool policies_named) const {
  if (seen.count("--causal") && seen.count("--no-causal")) usage("--causal and --no-causal are exclusive");
  if (causal_only && causal_ == false) usage("--no-causal: the logits at t must predict token t+1 without seeing it");
  if (full_context_)
    for (const char* fixed : {"--q-capacity", "--kv-capacity", "--top-k", "--policy", "--sinks", "--recent", "--lambda", "--init-k",
                              "--no-causal", "--layer"})
      if (seen.count(fixed))
        usage(std::string("--full-context fixes N = 0, causal, fifo, M >= T and K = M: drop ") + fixed);
  if (policies_named && seen.count("--policy")) usage("--policy and --compare are exclusive: --compare names the policies");
  if (!policies_named && policy_) {
    const std::string& name = *policy_;
    KvMemoryConfig named;
    apply_memory_name(named, name).or_throw();
    if (fields_.lambda && (named.policy.kind != PolicyKind::lfa || name == "h2o"))
      usage("--lambda only applies to --policy lfa, not " + name);
    if (fields_.init_k && !named.policy.attention_scored())
      usage("--init-k only applies to --policy lra_last|lra_max|lra_sum|lfa, not " + name);
  }
}

MemoryPlan MemoryOptions::plan(uint32_t blocks, uint32_t context_length, uint64_t positions,
                               const std::optional<NamedSetting>& named) const {
  return make_plan(blocks, context_length, positions, named, false);
}

MemoryPlan MemoryOptions::encoder_plan(uint32_t blocks, uint32_t context_length, uint64_t positions) const {
  return make_plan(blocks, context_length, positions, std::nullopt, true);
}

MemoryPlan MemoryOptions::make_plan(uint32_t blocks, uint32_t context_length, uint64_t positions,
                                    const std::optional<NamedSetting>& named, bool encoder) const {
  MemoryPlan plan;
  plan.chunk = chunk_.value_or(64);
  plan.flush_capable = flush_;
  plan.activations = fp16_activations_.value_or(false) ? MemoryStorage::f16 : MemoryStorage::f32;
  // Every block inherits it, overridden ones too (plan.for_block copies `all`).
  const LmInfinite lm_infinite = lm_infinite_.resolve(context_length);
  if (full_context_ || (named && named->full)) {
    plan.all = encoder ? MemorySetting::full_bidirectional(positions, plan.chunk).value_or_throw()
                       : MemorySetting::full_context(positions, plan.chunk).value_or_throw();
    plan.all.mode = retrieval_.value_or(RetrievalMode::per_head);
    plan.all.lm_infinite = lm_infinite;
    plan.all.kv.storage = kv_storage();
    return plan;
  }
  MemorySetting& s = plan.all;
  // An encoder's default is the whole input, whatever it was trained on
  // (T5's buckets have no length limit); a decoder's its trained context.
  const uint64_t whole = std::max<uint64_t>(positions, plan.chunk);
  s.kv.capacity = encoder ? static_cast<uint32_t>(std::min<uint64_t>(whole, UINT32_MAX))
                          : std::max(context_length, plan.chunk);
  s.kv.capacity = fields_.kv_capacity.value_or(s.kv.capacity);
  s.q_capacity = encoder ? s.kv.capacity : 0;  // an encoder's queries wait for the whole input
  s.kv.protect_new = protect_new_;
  s.kv.storage = kv_storage();
  s.top_k = 0;  // K = M
  s.mode = retrieval_.value_or(RetrievalMode::per_head);
  s.causal = causal_.value_or(!encoder);
  s.lm_infinite = lm_infinite;
  s.kv.policy = Policy::fifo();
  apply_memory_fields(s, fields_);
  // A policy, or an alias with its sinks or window (h2o's W = (M - sinks) / 2).
  const std::string name = named ? named->name : policy_.value_or("fifo");
  apply_memory_name(s.kv, name, fields_.sinks, fields_.recent).or_throw();
  for (const BlockOverride& o : overrides_)
    for (const auto& [first, last] : o.ranges) {
      if (last >= blocks)
        usage("--layer " + o.text + ": the model has " + std::to_string(blocks) + " blocks (0-" +
              std::to_string(blocks - 1) + ")");
      for (uint32_t l = first; l <= last; ++l) {
        MemorySetting b = plan.for_block(l);
        apply_memory_fields(b, o.fields);
        plan.blocks[l] = b;
      }
    }
  return plan;
}

namespace {

bool rounds_f16_rows_by_default(const std::string& architecture) {
  for (const char* a : {"qwen3", "phi3", "gemma2", "gemma3"})
    if (architecture == a) return true;
  return false;
}

}  // namespace

StackConfig MemoryOptions::stack_config(Model& model, uint64_t positions,
                                        const std::optional<NamedSetting>& named) const {
  const MemoryPlan memory = plan(model.info().blocks, model.info().context_length, positions, named);
  StackConfig config = naming_flags([&] { return model.stack_config(memory).value_or_throw(); });
  // llama.cpp's CPU backend multiplies F16 matrices with rows rounded to
  // fp16 (ggml's F16 dot products): the normed rows, the attention rows
  // into attn_output, the FFN's activated rows and the LM head's rows, and
  // takes GELU from an fp16 table; fp16 activations do all of it. The
  // architectures added with llama.cpp's outputs on F16 files
  // (../shared/arch-models: qwen3, phi3, gemma2, gemma3) follow it by
  // default, which their logits and greedy continuations need (on random
  // weights, fp32 rows part from them within tokens; docs/spec-notes.md).
  // llama and qwen2 keep fp32 rows, the results they have always given
  // (llama.cpp's to 1e-5 on F32 copies of the same weights; fp16 rows move
  // aidreams260K-F16's logits by 4.5e-4 of max|logit|). Either flag chooses
  // for every architecture.
  if (!fp16_activations_ && rounds_f16_rows_by_default(model.info().architecture)) {
    const BlockConfig& b = config.blocks.front();
    const std::vector<uint64_t> wo = {config.hidden, b.attention.shape.q_row()};
    if (model.info().kind == ModelKind::decoder &&
        model.weights().type_of("blk.0.attn_output.weight", wo).value_or_throw() == ElementType::f16)
      config.activations = MemoryStorage::f16;
  }
  return config;
}

EncoderDecoderConfig MemoryOptions::encoder_decoder_config(const Model& model, uint64_t input, uint32_t output) const {
  EncoderDecoderPlan memory;
  memory.encoder = encoder_plan(model.info().blocks, model.info().context_length, input);
  memory.encoder_memory = static_cast<uint32_t>(std::min<uint64_t>(input, UINT32_MAX));
  memory.decoder_positions = output;
  return naming_flags([&] { return model.encoder_decoder_config(memory).value_or_throw(); });
}

std::string MemoryOptions::help() {
  return std::string(R"(
memory (the same for every block unless --layer overrides it):
  --chunk S             positions read per step (default 64)
  --q-capacity N        Q memory: how many positions each query waits (default 0; an encoder's: M)
  --kv-capacity M       K/V memory capacity (default: the model's trained context length; an encoder's: the input)
  --top-k K             entries each query retrieves per head (default M: full attention over the memory)
  --policy P            eviction: fifo (default), lru, lfu, lra_last, lra_max, lra_sum, lfa, or an alias:
                        sinks or streamingllm (fifo, --sinks or 4), tova (lra_last), h2o (lfa, lambda 0,
                        --recent or W = (M - sinks) / 2)
  --lambda X            lfa decay per position, >= 0 (default 0: LFA-0)
  --init-k X            initial score mu - X*sigma of lra_* and lfa (default 1)
  --sinks N             the first N positions are never evicted (default 0)
  --recent W            the W most recent positions (p > newest - W) are never evicted (default 0;
                        needs M >= sinks + max(S, W))
  --no-protect-new      new entries may be evicted in the step that inserts them
  --fp16-memory         keys, values and waiting queries stored in fp16 (half the bytes; math stays fp32)
  --fp16-activations    the rows the matrix products read (normed, attention, FFN-activated and final
                        rows) stored in fp16, GELU from an fp16 table (math and accumulation stay fp32);
                        the default for qwen3, phi3, gemma2 and gemma3 files whose matrices are F16, as
                        llama.cpp's CPU backend computes them
  --fp32-activations    fp32 rows everywhere (the default for other architectures)
  --retrieval MODE      per_head (default) or shared top-K selection
  --causal              queries attend only to positions <= their own (the default, except in an encoder)
  --no-causal           queries also see the later positions they waited for (N > 0)
  --layer BLOCKS:SET    per-block override of q-capacity, kv-capacity, top-k, sinks, recent, policy, lambda, init-k; repeatable (0-3:kv-capacity=256,policy=lfa)
  --flush               finish reading by flushing each block's Q memory instead of draining with padding
  --full-context        the unbounded reference: N = 0, causal, fifo, M = all positions, K = M
                        (a model's sliding-window blocks keep their windows, as llama.cpp runs them)
)") + lm_infinite_help();
}

}  // namespace attendre::cli
