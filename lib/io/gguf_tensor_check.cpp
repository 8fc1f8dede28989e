#include "io/gguf_tensor_check.hpp"

#include "core/fail.hpp"
#include "core/model_spec.hpp"
#include "io/gguf_source.hpp"

namespace attendre::gguf {

ModelInfo check_tensors(const File& file, FileWeights& weights, std::span<const CheckedStack> stacks,
                        const std::set<std::string>& ignorable, ModelInfo info) {
  std::set<std::string> used;
  std::string prefix;
  auto need = [&](const std::string& stack_name, std::vector<uint64_t> shape) {
    const std::string name = weights.file_name(prefix + stack_name);
    if (!weights.type_of(prefix + stack_name, shape))
      fail(ErrorCode::malformed_input, file.path().string() + ": tensor " + detail::quote_name(name) + " of shape " +
                                           shape_text(shape) + " is missing");
    if (!used.insert(name).second) return;  // shared: the T5 stacks' embedding table, a bias table
    const TensorInfo& t = *file.find_tensor(name);
    info.parameters += t.elements();
    info.tensor_bytes += t.bytes;
  };
  auto vector = [&](const std::optional<VectorSpec>& v) {
    if (v) need(v->name, {v->size});
  };
  auto matrix = [&](const std::optional<MatrixSpec>& w) {
    if (!w) return;
    need(w->name, {w->rows, w->cols});
    if (w->bias) need(w->bias->name, {w->bias->size});
  };
  for (const CheckedStack& stack : stacks) {
    prefix = stack.prefix;
    const ModelSpec spec = model_spec(*stack.config).value_or_throw();
    matrix(spec.token_embd);
    vector(spec.output_norm);
    vector(spec.output_norm_bias);
    matrix(spec.output);
    vector(spec.rope_freqs);
    for (const BlockSpec& b : spec.blocks) {
      vector(b.attn_norm);
      vector(b.attn_norm_bias);
      for (const MatrixSpec& w : {b.wq, b.wk, b.wv, b.wo}) matrix(w);
      vector(b.ffn_norm);
      vector(b.ffn_norm_bias);
      matrix(b.gate);
      matrix(b.up);
      matrix(b.down);
      matrix(b.t5_table);
    }
  }
  uint32_t blocks = 0;
  for (const CheckedStack& stack : stacks) blocks += static_cast<uint32_t>(stack.config->blocks.size());
  for (const TensorInfo& t : file.tensors())
    if (!used.count(t.name) && !ignorable.count(t.name))
      fail(ErrorCode::unsupported, file.path().string() + ": tensor " + detail::quote_name(t.name) + " is not part of a " +
                                       info.architecture + " stack of " + std::to_string(blocks) +
                                       " blocks, and would be ignored");
  return info;
}

}  // namespace attendre::gguf
