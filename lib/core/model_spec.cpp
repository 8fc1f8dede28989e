#include "core/model_spec.hpp"

#include "core/try.hpp"

namespace attendre {
namespace {

std::optional<VectorSpec> vector_if(bool present, std::string name, uint64_t size) {
  return present ? std::optional<VectorSpec>(VectorSpec{std::move(name), size}) : std::nullopt;
}

MatrixSpec matrix(const std::string& name, uint64_t rows, uint64_t cols, bool bias) {
  return {name + ".weight", rows, cols, vector_if(bias, name + ".bias", rows)};
}

}  // namespace

std::string rope_factor_tensor(const RopeScaling& scaling) {
  if (!scaling.long_rope) return "rope_freqs.weight";
  return scaling.long_factors ? "rope_factors_long.weight" : "rope_factors_short.weight";
}

Result<ModelSpec> model_spec(const StackConfig& config) {
  ATTENDRE_TRY(config.check());
  const uint64_t H = config.hidden;
  ModelSpec m;
  if (config.vocab > 0) m.token_embd = matrix("token_embd", config.vocab, H, false);
  m.output_norm = {"output_norm.weight", H};
  m.output_norm_bias = vector_if(config.final_norm == NormKind::layer, "output_norm.bias", H);
  if (config.vocab > 0 && !config.tied_embeddings) m.output = matrix("output", config.vocab, H, false);
  for (size_t l = 0; l < config.blocks.size(); ++l) {
    const BlockConfig& b = config.blocks[l];
    const std::string p = "blk." + std::to_string(l) + ".";
    const AttentionShape& s = b.attention.shape;
    const bool layer_norm = b.norm == NormKind::layer;
    BlockSpec t;
    t.attn_norm = {p + "attn_norm.weight", H};
    t.attn_norm_bias = vector_if(layer_norm, p + "attn_norm.bias", H);
    t.wq = matrix(p + "attn_q", s.q_row(), H, b.qkv_bias);
    t.wk = matrix(p + "attn_k", s.kv_row(), H, b.qkv_bias);
    t.wv = matrix(p + "attn_v", s.kv_row(), H, b.qkv_bias);
    t.wo = matrix(p + "attn_output", H, s.q_row(), b.output_bias);
    t.attn_post_norm = vector_if(b.post_norms, p + "post_attention_norm.weight", H);
    t.ffn_post_norm = vector_if(b.post_norms && b.ffn > 0, p + "post_ffw_norm.weight", H);
    t.q_norm = vector_if(b.qk_norm, p + "attn_q_norm.weight", s.head_dim);
    t.k_norm = vector_if(b.qk_norm, p + "attn_k_norm.weight", s.head_dim);
    if (b.ffn > 0) {
      t.ffn_norm = VectorSpec{p + "ffn_norm.weight", H};
      t.ffn_norm_bias = vector_if(layer_norm, p + "ffn_norm.bias", H);
      if (b.gated) t.gate = matrix(p + "ffn_gate", b.ffn, H, b.ffn_bias);
      t.up = matrix(p + "ffn_up", b.ffn, H, b.ffn_bias);
      t.down = matrix(p + "ffn_down", H, b.ffn, b.ffn_bias);
    }
    if (b.attention.retrieval.bias == BiasKind::t5) {
      const size_t owner = b.t5_table_block ? *b.t5_table_block : l;
      t.t5_table = matrix("blk." + std::to_string(owner) + ".attn_rel_b", b.attention.retrieval.t5.num_buckets,
                          s.heads_q, false);
    }
    if (b.rope && b.rope_scaling.freq_factors)
      m.rope_freqs = VectorSpec{rope_factor_tensor(b.rope_scaling), (b.rope_dims ? b.rope_dims : s.head_dim) / 2};
    m.blocks.push_back(std::move(t));
  }
  return m;
}

}  // namespace attendre
