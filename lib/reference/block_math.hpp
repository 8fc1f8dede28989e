// Float64 math of one pre-norm transformer block around its attention:
// project() before it (norm, q/k/v projections, RoPE) and finish() after it
// (output projection, residual, norm, FFN, residual). The reference stack and
// the dense full-sequence forward share it.
#pragma once

#include "core/positions.hpp"
#include "reference/model_tensors.hpp"

#include <attendre/stack.hpp>

#include <span>
#include <vector>

namespace attendre::reference {

class BlockMath {
 public:
  // `activations`: how the device stores the rows its products read
  // (StackConfig::activations); f16 rounds every row a product reads (the
  // normed rows, the attention rows into Wo, the FFN's activated rows) as
  // the device stores them (fp32, then fp16 to nearest even), and takes
  // GELU from ggml's fp16 table (ops::gelu_fp16_table).
  BlockMath(uint32_t hidden, const BlockConfig& config, const BlockTensors& tensors,
            MemoryStorage activations = MemoryStorage::f32);

  struct Projected {
    std::vector<double> q, k, v;  // rows x heads x head_dim, RoPE applied (not under LM-Infinite)
  };
  // For a cross-attention block only q is projected from the rows.
  Projected project(std::span<const double> x, std::span<const int64_t> positions) const;
  // Keys and values of a cross-attention block from encoder output rows
  // (already normed by the encoder; no RoPE).
  Projected project_memory(std::span<const double> encoder_rows) const;
  // x_out = y + FFN(norm(y)) with y = residual + attention Wo (+ bo); y
  // itself without an FFN.
  std::vector<double> finish(std::span<const double> attention, std::span<const double> residual) const;

  // LM-Infinite's dot product of an un-rotated query head at p_q with an
  // un-rotated key head at p_k scored `distance` = d_eff positions apart:
  // R(p_q) q . R(p_k) k where the distance is their own (ordinary RoPE),
  // else (R(distance) q) . k, the device's operands (docs/spec-notes.md).
  // With float angles (positions::rope_angle) the two forms differ, so the
  // uncapped pairs take ordinary RoPE's.
  double rotated_dot(const double* q, int64_t p_q, const double* k, int64_t p_k, int64_t distance) const;

  uint32_t hidden() const { return hidden_; }
  const BlockConfig& config() const { return config_; }

 private:
  std::vector<double> norm(std::span<const double> x, const std::vector<double>& g,
                           const std::vector<double>& b) const;
  // `rows` as the device stores activations.
  std::vector<double> stored(std::vector<double> rows) const;

  uint32_t hidden_;
  BlockConfig config_;
  MemoryStorage activations_;
  positions::RopeAngles rope_angles_;  // RoPE blocks
  std::vector<double> attn_g_, attn_b_, ffn_g_, ffn_b_;
  std::vector<double> attn_post_g_, ffn_post_g_;  // post_norms only
  std::vector<double> q_norm_g_, k_norm_g_;  // per-head gains (BlockConfig::qk_norm)
  std::vector<double> wq_, wk_, wv_, wo_, bq_, bk_, bv_, bo_;
  std::vector<double> gate_, up_, down_, bgate_, bup_, bdown_;
};

// The final norm (output_norm) and, with a vocabulary, the logits.
class HeadMath {
 public:
  HeadMath(const StackConfig& config, const ModelTensors& tensors);
  std::vector<double> norm(std::span<const double> x) const;
  std::vector<double> logits(std::span<const double> normed) const;
  std::vector<double> embed(std::span<const uint32_t> tokens) const;

 private:
  StackConfig config_;
  std::vector<double> g_, b_, embedding_, output_;
};

}  // namespace attendre::reference
