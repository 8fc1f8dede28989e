#include "reference/model_tensors.hpp"

#include "core/half.hpp"
#include "gguf/quant.hpp"
#include "core/fail.hpp"

#include <attendre/error.hpp>

#include <cstring>

namespace attendre::reference {
namespace {

class Loader {
 public:
  Loader(WeightSource& source, bool half) : source_(source), half_(half) {}

  Tensor vector(const VectorSpec& spec) { return read(spec.name, {spec.size}, false); }
  std::optional<Tensor> vector(const std::optional<VectorSpec>& spec) {
    return spec ? std::optional<Tensor>(vector(*spec)) : std::nullopt;
  }
  Tensor matrix(const MatrixSpec& spec) { return read(spec.name, {spec.rows, spec.cols}, half_); }
  std::optional<Tensor> matrix(const std::optional<MatrixSpec>& spec) {
    return spec ? std::optional<Tensor>(matrix(*spec)) : std::nullopt;
  }
  // Small tables the device keeps in fp32 whatever config.weights says.
  std::optional<Tensor> table(const std::optional<MatrixSpec>& spec) {
    return spec ? std::optional<Tensor>(read(spec->name, {spec->rows, spec->cols}, false)) : std::nullopt;
  }

 private:
  // fp32 values stored as fp16 (config.weights) hold the rounded values.
  Tensor read(const std::string& name, std::vector<uint64_t> shape, bool round_f32) {
    const std::optional<TensorView> view = source_.tensor(name, shape).value_or_throw();
    if (!view) fail(ErrorCode::invalid_argument, "the weights have no tensor '" + name + "'");
    Tensor t{name, std::move(shape), {}};
    uint64_t count = 1;
    for (uint64_t d : t.shape) count *= d;
    const uint64_t needed = encoded_bytes(view->type, count).value_or_throw();
    require(view->bytes.size() == needed, "tensor '" + name + "' holds " + std::to_string(view->bytes.size()) +
                                              " bytes, its " + std::string(to_string(view->type)) + " shape needs " +
                                              std::to_string(needed));
    if (view->type == ElementType::f32) {
      std::vector<float> values(count);
      std::memcpy(values.data(), view->bytes.data(), count * 4);
      for (float x : values) t.data.push_back(round_f32 ? half::half_to_float(half::float_to_half(x)) : x);
    } else {
      t.data = gguf::dequantize(static_cast<gguf::TensorType>(view->type), view->bytes).value_or_throw();
    }
    return t;
  }

  WeightSource& source_;
  bool half_;
};

BlockTensors load_block(Loader& load, const BlockSpec& spec) {
  BlockTensors t;
  t.attn_norm = load.vector(spec.attn_norm);
  t.attn_norm_bias = load.vector(spec.attn_norm_bias);
  t.wq = load.matrix(spec.wq);
  t.wk = load.matrix(spec.wk);
  t.wv = load.matrix(spec.wv);
  t.wo = load.matrix(spec.wo);
  t.bq = load.vector(spec.wq.bias);
  t.bk = load.vector(spec.wk.bias);
  t.bv = load.vector(spec.wv.bias);
  t.bo = load.vector(spec.wo.bias);
  t.attn_post_norm = load.vector(spec.attn_post_norm);
  t.ffn_post_norm = load.vector(spec.ffn_post_norm);
  t.q_norm = load.vector(spec.q_norm);
  t.k_norm = load.vector(spec.k_norm);
  if (spec.ffn_norm) {
    t.ffn_norm = load.vector(*spec.ffn_norm);
    t.ffn_norm_bias = load.vector(spec.ffn_norm_bias);
    t.gate = load.matrix(spec.gate);
    t.up = load.matrix(*spec.up);
    t.down = load.matrix(*spec.down);
    if (spec.gate) t.bgate = load.vector(spec.gate->bias);
    t.bup = load.vector(spec.up->bias);
    t.bdown = load.vector(spec.down->bias);
  }
  t.t5_table = load.table(spec.t5_table);
  return t;
}

}  // namespace

ModelTensors load_model(const StackConfig& config, WeightSource& source) {
  const ModelSpec spec = model_spec(config).value_or_throw();
  Loader load(source, config.weights == WeightType::f16);
  ModelTensors m;
  m.token_embd = load.matrix(spec.token_embd);
  m.output_norm = load.vector(spec.output_norm);
  m.output_norm_bias = load.vector(spec.output_norm_bias);
  m.output = load.matrix(spec.output);
  const std::optional<Tensor> rope_freqs = load.vector(spec.rope_freqs);
  for (size_t l = 0; l < spec.blocks.size(); ++l) {
    m.blocks.push_back(load_block(load, spec.blocks[l]));
    if (config.blocks[l].rope && config.blocks[l].rope_scaling.freq_factors) m.blocks.back().rope_freqs = rope_freqs;
  }
  return m;
}

}  // namespace attendre::reference
