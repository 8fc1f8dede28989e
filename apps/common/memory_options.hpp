// The memory options of attendre-generate and attendre-perplexity, parsed by
// one parser: S, N, M, K, policy, lambda, init-k, sinks, per-block
// overrides, drain or flush, --full-context (N = 0, causal, fifo, M >= T,
// K = M: the unbounded reference setting) and --lm-infinite
// (lm_infinite_option.hpp). For an encoder-decoder they set the encoder.
#pragma once

#include "arguments.hpp"
#include "lm_infinite_option.hpp"

#include <attendre/config.hpp>
#include <attendre/memory_plan.hpp>
#include <attendre/model.hpp>

#include <optional>
#include <string>
#include <vector>

namespace attendre::cli {

// What --layer changes for some blocks; unset fields keep the global setting.
struct BlockOverride {
  std::string text;  // as given, for messages
  std::vector<std::pair<uint32_t, uint32_t>> ranges;  // inclusive block ranges
  std::optional<uint32_t> q_capacity, kv_capacity, top_k, sinks;
  std::optional<PolicyKind> policy;
  std::optional<double> lambda, init_k;
};

// A named setting of --compare: "full" (--full-context), "sinks" (fifo with
// attention sinks, StreamingLLM) or a policy name.
struct NamedSetting {
  std::string name;
  bool full = false;
  bool sinks = false;
  std::optional<PolicyKind> policy;
};
// Throws UsageError naming `flag` for an unknown name.
NamedSetting parse_setting(const std::string& flag, const std::string& name);

class MemoryOptions {
 public:
  // Registers the flags into `table`; their values land here.
  void add_to(OptionTable& table);
  // After parsing: refuses combinations that would be silently ignored.
  // `causal_only`: the tool scores next tokens (perplexity), so --no-causal
  // is refused. `policies_named`: --compare names the policies itself.
  void check(const std::set<std::string>& seen, bool causal_only, bool policies_named) const;

  // The plan for a model of `blocks` blocks trained on `context_length`
  // positions, reading a stream of `positions` positions in all; `named`
  // replaces the policy (or the whole setting, for "full"). Defaults: S = 64,
  // N = 0, M = the trained context, K = M, fifo, causal. Throws UsageError
  // for an override of a block the model lacks.
  MemoryPlan plan(uint32_t blocks, uint32_t context_length, uint64_t positions,
                  const std::optional<NamedSetting>& named = std::nullopt) const;

  // An encoder's plan for an input of `positions` positions: the same flags,
  // with the unbounded bidirectional setting as the defaults (M = max(T, S),
  // N = M: every query waits for the whole input, K = M, not causal).
  MemoryPlan encoder_plan(uint32_t blocks, uint32_t context_length, uint64_t positions) const;

  // The model's stack under plan(); the library's messages about the memory
  // fields (N, M, S, K, n_sink) name the flags too. A decoder whose matrices
  // are F16 stores its activations in fp16 as llama.cpp rounds them.
  StackConfig stack_config(Model& model, uint64_t positions,
                           const std::optional<NamedSetting>& named = std::nullopt) const;

  // An encoder-decoder reading `input` positions and decoding `output`:
  // encoder_plan() on the encoder, an encoder output memory that keeps
  // every encoder output (O = T), decoder self-attention over all `output`.
  EncoderDecoderConfig encoder_decoder_config(const Model& model, uint64_t input, uint32_t output) const;

  bool flush() const { return flush_; }
  bool full_context() const { return full_context_; }
  static std::string help();  // one line per option

 private:
  // --fp16-memory: the K/V and Q memories of every run, the full context's too.
  MemoryStorage kv_storage() const { return fp16_memory_ ? MemoryStorage::f16 : MemoryStorage::f32; }
  MemoryPlan make_plan(uint32_t blocks, uint32_t context_length, uint64_t positions,
                       const std::optional<NamedSetting>& named, bool encoder) const;

  std::optional<uint32_t> chunk_, q_capacity_, kv_capacity_, top_k_, sinks_;
  std::optional<PolicyKind> policy_;
  std::optional<double> lambda_, init_k_;
  std::optional<RetrievalMode> retrieval_;
  bool protect_new_ = true, flush_ = false, full_context_ = false, fp16_memory_ = false,
       fp16_activations_ = false;
  std::optional<bool> causal_;  // absent: causal, except in an encoder
  LmInfiniteRequest lm_infinite_;
  std::vector<BlockOverride> overrides_;
};

}  // namespace attendre::cli
