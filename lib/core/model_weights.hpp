// The tensors of a stack, read once from a WeightSource by name and shape.
// Both backends load through here, so with fp16 storage the float64
// reference computes with exactly the rounded values the GPU holds.
#pragma once

#include <attendre/stack.hpp>

#include <optional>
#include <string>
#include <vector>

namespace attendre {

struct Tensor {
  std::string name;
  std::vector<uint64_t> shape;
  std::vector<float> data;
  uint64_t rows() const { return shape.front(); }
  uint64_t cols() const { return shape.size() > 1 ? shape[1] : 1; }
};

// A block's tensors; the FFN ones stay empty when the block has no FFN.
struct BlockTensors {
  Tensor attn_norm, ffn_norm;
  std::optional<Tensor> attn_norm_bias, ffn_norm_bias;  // LayerNorm shifts
  Tensor wq, wk, wv, wo;
  std::optional<Tensor> bq, bk, bv, bo;
  std::optional<Tensor> gate;  // gated FFN only
  Tensor up, down;
  std::optional<Tensor> bgate, bup, bdown;
};

struct ModelTensors {
  std::optional<Tensor> token_embd;  // vocab > 0
  Tensor output_norm;
  std::optional<Tensor> output_norm_bias;
  std::optional<Tensor> output;  // vocab > 0 and not tied
  std::vector<BlockTensors> blocks;
};

// Reads every tensor the config names; matrices (and the embedding table)
// are rounded through fp16 when config.weights is f16.
ModelTensors load_model(const StackConfig& config, WeightSource& source);

}  // namespace attendre
