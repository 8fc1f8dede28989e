#include "core/model_weights.hpp"

#include "core/half.hpp"

namespace attendre {
namespace {

class Loader {
 public:
  Loader(WeightSource& source, bool half) : source_(source), half_(half) {}

  Tensor vector(const std::string& name, uint64_t n) { return read(name, {n}, false); }
  Tensor matrix(const std::string& name, uint64_t rows, uint64_t cols) { return read(name, {rows, cols}, half_); }
  std::optional<Tensor> optional_vector(bool present, const std::string& name, uint64_t n) {
    return present ? std::optional<Tensor>(vector(name, n)) : std::nullopt;
  }

 private:
  Tensor read(const std::string& name, std::vector<uint64_t> shape, bool round) {
    Tensor t{name, std::move(shape), {}};
    uint64_t count = 1;
    for (uint64_t d : t.shape) count *= d;
    t.data.resize(count);
    source_.read(name, t.shape, t.data);
    if (round)
      for (float& x : t.data) x = half::half_to_float(half::float_to_half(x));
    return t;
  }

  WeightSource& source_;
  bool half_;
};

}  // namespace

ModelTensors load_model(const StackConfig& config, WeightSource& source) {
  config.validate();
  Loader load(source, config.weights == WeightType::f16);
  const uint64_t H = config.hidden;
  ModelTensors m;
  if (config.vocab > 0) m.token_embd = load.matrix("token_embd.weight", config.vocab, H);
  m.output_norm = load.vector("output_norm.weight", H);
  m.output_norm_bias = load.optional_vector(config.final_norm == NormKind::layer, "output_norm.bias", H);
  if (config.vocab > 0 && !config.tied_embeddings) m.output = load.matrix("output.weight", config.vocab, H);
  for (size_t l = 0; l < config.blocks.size(); ++l) {
    const BlockConfig& b = config.blocks[l];
    const std::string p = "blk." + std::to_string(l) + ".";
    const AttentionShape& s = b.attention.shape;
    const bool layer_norm = b.norm == NormKind::layer;
    BlockTensors t;
    t.attn_norm = load.vector(p + "attn_norm.weight", H);
    t.attn_norm_bias = load.optional_vector(layer_norm, p + "attn_norm.bias", H);
    t.wq = load.matrix(p + "attn_q.weight", s.q_row(), H);
    t.wk = load.matrix(p + "attn_k.weight", s.kv_row(), H);
    t.wv = load.matrix(p + "attn_v.weight", s.kv_row(), H);
    t.bq = load.optional_vector(b.qkv_bias, p + "attn_q.bias", s.q_row());
    t.bk = load.optional_vector(b.qkv_bias, p + "attn_k.bias", s.kv_row());
    t.bv = load.optional_vector(b.qkv_bias, p + "attn_v.bias", s.kv_row());
    t.wo = load.matrix(p + "attn_output.weight", H, s.q_row());
    t.bo = load.optional_vector(b.output_bias, p + "attn_output.bias", H);
    if (b.ffn > 0) {
      t.ffn_norm = load.vector(p + "ffn_norm.weight", H);
      t.ffn_norm_bias = load.optional_vector(layer_norm, p + "ffn_norm.bias", H);
      if (b.gated) t.gate = load.matrix(p + "ffn_gate.weight", b.ffn, H);
      t.up = load.matrix(p + "ffn_up.weight", b.ffn, H);
      t.down = load.matrix(p + "ffn_down.weight", H, b.ffn);
      t.bgate = load.optional_vector(b.ffn_bias && b.gated, p + "ffn_gate.bias", b.ffn);
      t.bup = load.optional_vector(b.ffn_bias, p + "ffn_up.bias", b.ffn);
      t.bdown = load.optional_vector(b.ffn_bias, p + "ffn_down.bias", H);
    }
    m.blocks.push_back(std::move(t));
  }
  return m;
}

}  // namespace attendre
