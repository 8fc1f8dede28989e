#include "reference/block_math.hpp"

#include "reference/ops.hpp"

#include "core/half.hpp"
#include "core/positions.hpp"

#include <cmath>

namespace attendre::reference {
namespace {

std::vector<double> widen(const Tensor& t) { return t.data; }
std::vector<double> widen(const std::optional<Tensor>& t) { return t ? widen(*t) : std::vector<double>{}; }

}  // namespace

BlockMath::BlockMath(uint32_t hidden, const BlockConfig& config, const BlockTensors& t, MemoryStorage activations)
    : hidden_(hidden),
      config_(config),
      activations_(activations),
      attn_g_(widen(t.attn_norm)),
      attn_b_(widen(t.attn_norm_bias)),
      ffn_g_(widen(t.ffn_norm)),
      ffn_b_(widen(t.ffn_norm_bias)),
      attn_post_g_(widen(t.attn_post_norm)),
      ffn_post_g_(widen(t.ffn_post_norm)),
      q_norm_g_(widen(t.q_norm)),
      k_norm_g_(widen(t.k_norm)),
      wq_(widen(t.wq)),
      wk_(widen(t.wk)),
      wv_(widen(t.wv)),
      wo_(widen(t.wo)),
      bq_(widen(t.bq)),
      bk_(widen(t.bk)),
      bv_(widen(t.bv)),
      bo_(widen(t.bo)),
      gate_(widen(t.gate)),
      up_(widen(t.up)),
      down_(widen(t.down)),
      bgate_(widen(t.bgate)),
      bup_(widen(t.bup)),
      bdown_(widen(t.bdown)) {
  if (config.rope)
    rope_angles_ = positions::rope_angles(
        config.rope_theta, config.rope_dims ? config.rope_dims : config.attention.shape.head_dim, config.rope_scaling,
        t.rope_freqs ? std::span<const double>(t.rope_freqs->data) : std::span<const double>{})
                            .value_or_throw();
}

std::vector<double> BlockMath::norm(std::span<const double> x, const std::vector<double>& g,
                                    const std::vector<double>& b) const {
  return config_.norm == NormKind::rms ? ops::rms_norm(x, hidden_, g, config_.norm_eps)
                                       : ops::layer_norm(x, hidden_, g, b, config_.norm_eps);
}

std::vector<double> BlockMath::stored(std::vector<double> rows) const {
  if (activations_ == MemoryStorage::f16)
    for (double& v : rows) v = half::stored_value(v, MemoryStorage::f16);
  return rows;
}

BlockMath::Projected BlockMath::project(std::span<const double> x, std::span<const int64_t> positions) const {
  const AttentionShape& s = config_.attention.shape;
  const auto rows = static_cast<uint32_t>(positions.size());
  const std::vector<double> h = stored(norm(x, attn_g_, attn_b_));
  Projected p;
  p.q = ops::matmul(h, wq_, rows, hidden_, s.q_row(), bq_);
  if (config_.cross_attention) return p;
  p.k = ops::matmul(h, wk_, rows, hidden_, s.kv_row(), bk_);
  p.v = ops::matmul(h, wv_, rows, hidden_, s.kv_row(), bv_);
  // Rows of heads x head_dim: rms_norm over head_dim normalizes each head.
  if (config_.qk_norm) {
    p.q = ops::rms_norm(p.q, s.head_dim, q_norm_g_, config_.norm_eps);
    p.k = ops::rms_norm(p.k, s.head_dim, k_norm_g_, config_.norm_eps);
  }
  // LM-Infinite rotates at retrieval, by each pair's capped distance.
  if (config_.rope && !config_.lm_infinite.enabled) {
    const uint32_t dims = config_.rope_dims ? config_.rope_dims : s.head_dim;
    p.q = ops::rope(p.q, positions, s.heads_q, s.head_dim, dims, rope_angles_, config_.rope_layout);
    p.k = ops::rope(p.k, positions, s.heads_kv, s.head_dim, dims, rope_angles_, config_.rope_layout);
  }
  return p;
}

double BlockMath::rotated_dot(const double* q, int64_t p_q, const double* k, int64_t p_k, int64_t distance) const {
  const uint32_t D = config_.attention.shape.head_dim;
  const uint32_t dims = config_.rope_dims ? config_.rope_dims : D;
  const auto turn = [&](const double* x, int64_t p) {
    const int64_t at[] = {p};
    return ops::rope(std::span<const double>(x, D), at, 1, D, dims, rope_angles_, config_.rope_layout);
  };
  const bool local = distance == p_q - p_k;
  const std::vector<double> query = turn(q, local ? p_q : distance);
  const std::vector<double> key = local ? turn(k, p_k) : std::vector<double>(k, k + D);
  double dot = 0.0;
  for (uint32_t d = 0; d < D; ++d) dot += query[d] * key[d];
  return dot;
}

BlockMath::Projected BlockMath::project_memory(std::span<const double> encoder_rows) const {
  const AttentionShape& s = config_.attention.shape;
  const auto rows = static_cast<uint32_t>(encoder_rows.size() / hidden_);
  Projected p;
  p.k = ops::matmul(encoder_rows, wk_, rows, hidden_, s.kv_row(), bk_);
  p.v = ops::matmul(encoder_rows, wv_, rows, hidden_, s.kv_row(), bv_);
  return p;
}

std::vector<double> BlockMath::finish(std::span<const double> attention, std::span<const double> residual) const {
  const AttentionShape& s = config_.attention.shape;
  const auto rows = static_cast<uint32_t>(residual.size() / hidden_);
  // The output projection reads the attention rows as the device stores them.
  const std::vector<double> read = stored(std::vector<double>(attention.begin(), attention.end()));
  // Post norms (Gemma): the residual adds the normed sublayer output.
  const std::vector<double> y =
      config_.post_norms
          ? ops::add(residual, norm(ops::matmul(read, wo_, rows, s.q_row(), hidden_, bo_), attn_post_g_, {}))
          : ops::matmul(read, wo_, rows, s.q_row(), hidden_, bo_, residual);
  if (config_.ffn == 0) return y;
  const std::vector<double> h = stored(norm(y, ffn_g_, ffn_b_));
  const std::vector<double> up = ops::matmul(h, up_, rows, hidden_, config_.ffn, bup_);
  const std::vector<double> gate = config_.gated ? ops::matmul(h, gate_, rows, hidden_, config_.ffn, bgate_) : up;
  // fp16 activations take GELU from ggml's fp16 table, as llama.cpp's CPU
  // backend evaluates it.
  const std::vector<double> act = stored(
      activations_ == MemoryStorage::f16 ? ops::fp16_activation(config_.activation, config_.gated, gate, up)
      : config_.gated                    ? ops::gated_activation(config_.activation, gate, up)
                                         : ops::activation(config_.activation, gate));
  if (config_.post_norms) return ops::add(y, norm(ops::matmul(act, down_, rows, config_.ffn, hidden_, bdown_), ffn_post_g_, {}));
  return ops::matmul(act, down_, rows, config_.ffn, hidden_, bdown_, y);
}

HeadMath::HeadMath(const StackConfig& config, const ModelTensors& t)
    : config_(config), g_(widen(t.output_norm)), b_(widen(t.output_norm_bias)) {
  if (t.token_embd) embedding_ = widen(*t.token_embd);
  if (t.output) output_ = widen(*t.output);
  else if (config.tied_embeddings) output_ = embedding_;
}

std::vector<double> HeadMath::norm(std::span<const double> x) const {
  return config_.final_norm == NormKind::rms ? ops::rms_norm(x, config_.hidden, g_, config_.final_norm_eps)
                                             : ops::layer_norm(x, config_.hidden, g_, b_, config_.final_norm_eps);
}

std::vector<double> HeadMath::logits(std::span<const double> normed) const {
  const auto rows = static_cast<uint32_t>(normed.size() / config_.hidden);
  // The LM head reads the final rows as the device stores activations.
  std::vector<double> rows_read(normed.begin(), normed.end());
  if (config_.activations == MemoryStorage::f16)
    for (double& v : rows_read) v = half::stored_value(v, MemoryStorage::f16);
  std::vector<double> logits = ops::matmul(rows_read, output_, rows, config_.hidden, config_.vocab);
  for (double& x : logits) x = ops::soft_cap(x, config_.logit_soft_cap);
  return logits;
}

std::vector<double> HeadMath::embed(std::span<const uint32_t> tokens) const {
  std::vector<double> rows = ops::embedding(embedding_, config_.hidden, tokens);
  // The device scales in fp32, as llama.cpp does: the factor as a float.
  const double scale = static_cast<float>(config_.embedding_scale);
  for (double& x : rows) x *= scale;
  return rows;
}

}  // namespace attendre::reference
