// The tensors a stack configuration needs, by name and shape, in load order:
// one description both backends load from (the device in each tensor's
// encoding, the float64 reference decoded), so they can never disagree on
// which tensor is which.
#pragma once

#include <attendre/stack.hpp>

#include <optional>
#include <string>
#include <vector>

namespace attendre {

struct VectorSpec {
  std::string name;
  uint64_t size = 0;
};

// A [rows][cols] matrix with an optional fp32 bias of `rows`.
struct MatrixSpec {
  std::string name;
  uint64_t rows = 0, cols = 0;
  std::optional<VectorSpec> bias;
};

struct BlockSpec {
  VectorSpec attn_norm;
  std::optional<VectorSpec> attn_norm_bias;  // LayerNorm shift
  MatrixSpec wq, wk, wv, wo;
  std::optional<VectorSpec> q_norm, k_norm;           // per-head norm gains [head_dim] (BlockConfig::qk_norm)
  std::optional<VectorSpec> ffn_norm, ffn_norm_bias;  // blocks with an FFN
  std::optional<MatrixSpec> gate, up, down;           // gate: gated FFNs only
  // BlockConfig::post_norms: after attention, and after the FFN (blocks with one).
  std::optional<VectorSpec> attn_post_norm, ffn_post_norm;
  // T5 bias table [num_buckets][heads_q]: this block's, or the one of the
  // block it shares (BlockConfig::t5_table_block).
  std::optional<MatrixSpec> t5_table;
};

struct ModelSpec {
  std::optional<MatrixSpec> token_embd;  // vocab > 0
  VectorSpec output_norm;
  std::optional<VectorSpec> output_norm_bias;
  std::optional<MatrixSpec> output;  // vocab > 0 and not tied
  // Per-pair RoPE divisors [rope_dims / 2] (RopeScaling::freq_factors):
  // rope_freqs.weight, or LongRoPE's short or long table.
  std::optional<VectorSpec> rope_freqs;
  std::vector<BlockSpec> blocks;
};

// The tensor holding the per-pair RoPE divisors of `scaling` (freq_factors).
std::string rope_factor_tensor(const RopeScaling& scaling);

// The tensors `config` needs; StackConfig::check()'s failure when it is invalid.
Result<ModelSpec> model_spec(const StackConfig& config);

}  // namespace attendre
