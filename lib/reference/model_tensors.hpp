// The tensors of a stack for the float64 reference: read from a
// WeightSource through the model spec (core/model_spec.hpp) and decoded to
// float64 from each tensor's encoding, with fp32 matrices rounded through
// fp16 when the config stores them so, exactly as the device holds them.
#pragma once

#include "core/model_spec.hpp"

#include <attendre/stack.hpp>

#include <optional>
#include <string>
#include <vector>

namespace attendre::reference {

struct Tensor {
  std::string name;
  std::vector<uint64_t> shape;
  std::vector<double> data;
  uint64_t rows() const { return shape.front(); }
  uint64_t cols() const { return shape.size() > 1 ? shape[1] : 1; }
};

// A block's tensors; the FFN ones stay empty when the block has no FFN.
struct BlockTensors {
  Tensor attn_norm, ffn_norm;
  std::optional<Tensor> attn_norm_bias, ffn_norm_bias;  // LayerNorm shifts
  std::optional<Tensor> attn_post_norm, ffn_post_norm;  // BlockConfig::post_norms
  Tensor wq, wk, wv, wo;
  std::optional<Tensor> bq, bk, bv, bo;
  std::optional<Tensor> q_norm, k_norm;  // per-head norm gains [head_dim] (BlockConfig::qk_norm)
  std::optional<Tensor> gate;  // gated FFN only
  Tensor up, down;
  std::optional<Tensor> bgate, bup, bdown;
  std::optional<Tensor> t5_table;    // T5 bias [num_buckets][heads_q] (its own or the one it shares)
  std::optional<Tensor> rope_freqs;  // the model's per-pair RoPE divisors, for blocks that read them
};

struct ModelTensors {
  std::optional<Tensor> token_embd;  // vocab > 0
  Tensor output_norm;
  std::optional<Tensor> output_norm_bias;
  std::optional<Tensor> output;  // vocab > 0 and not tied
  std::vector<BlockTensors> blocks;
};

// Reads and decodes every tensor the config names. Throws Error naming a
// missing tensor or one whose encoding has no decoder.
ModelTensors load_model(const StackConfig& config, WeightSource& source);

}  // namespace attendre::reference
