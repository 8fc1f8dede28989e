#include "model/gguf_tensor_check.hpp"

#include "core/model_spec.hpp"
#include "core/printable.hpp"
#include "core/try.hpp"
#include "gguf/gguf_source.hpp"

namespace attendre::gguf {

Result<ModelInfo> check_tensors(const File& file, FileWeights& weights, std::span<const CheckedStack> stacks,
                                const std::set<std::string>& ignorable, ModelInfo info) {
  std::set<std::string> used;
  std::string prefix;
  auto need = [&](const std::string& stack_name, std::vector<uint64_t> shape) -> Status {
    const std::string name = weights.file_name(prefix + stack_name);
    ATTENDRE_TRY_ASSIGN(const std::optional<ElementType> type, weights.type_of(prefix + stack_name, shape));
    if (!type)
      return malformed_input(file.path().string() + ": tensor " + quote(name) + " of shape " +
                             shape_text(weights.file_shape(prefix + stack_name, shape)) + " is missing");
    if (!used.insert(name).second) return {};  // shared: the T5 stacks' embedding table, a bias table
    const TensorInfo& t = *file.find_tensor(name);
    info.parameters += t.elements();
    info.tensor_bytes += t.bytes;
    return {};
  };
  auto vector = [&](const std::optional<VectorSpec>& v) -> Status {
    if (v) return need(v->name, {v->size});
    return {};
  };
  auto matrix = [&](const std::optional<MatrixSpec>& w) -> Status {
    if (!w) return {};
    ATTENDRE_TRY(need(w->name, {w->rows, w->cols}));
    if (w->bias) return need(w->bias->name, {w->bias->size});
    return {};
  };
  for (const CheckedStack& stack : stacks) {
    prefix = stack.prefix;
    ATTENDRE_TRY_ASSIGN(const ModelSpec spec, model_spec(*stack.config));
    ATTENDRE_TRY(matrix(spec.token_embd));
    ATTENDRE_TRY(vector(spec.output_norm));
    ATTENDRE_TRY(vector(spec.output_norm_bias));
    ATTENDRE_TRY(matrix(spec.output));
    ATTENDRE_TRY(vector(spec.rope_freqs));
    for (const BlockSpec& b : spec.blocks) {
      ATTENDRE_TRY(vector(b.attn_norm));
      ATTENDRE_TRY(vector(b.attn_norm_bias));
      for (const MatrixSpec& w : {b.wq, b.wk, b.wv, b.wo}) ATTENDRE_TRY(matrix(w));
      ATTENDRE_TRY(vector(b.q_norm));
      ATTENDRE_TRY(vector(b.k_norm));
      ATTENDRE_TRY(vector(b.ffn_norm));
      ATTENDRE_TRY(vector(b.ffn_norm_bias));
      ATTENDRE_TRY(vector(b.attn_post_norm));
      ATTENDRE_TRY(vector(b.ffn_post_norm));
      ATTENDRE_TRY(matrix(b.gate));
      ATTENDRE_TRY(matrix(b.up));
      ATTENDRE_TRY(matrix(b.down));
      ATTENDRE_TRY(matrix(b.t5_table));
    }
  }
  uint32_t blocks = 0;
  for (const CheckedStack& stack : stacks) blocks += static_cast<uint32_t>(stack.config->blocks.size());
  for (const TensorInfo& t : file.tensors())
    if (!used.count(t.name) && !ignorable.count(t.name))
      return Status(ErrorCode::unsupported, file.path().string() + ": tensor " + quote(t.name) +
                                                " is not part of a " + info.architecture + " stack of " +
                                                std::to_string(blocks) + " blocks, and would be ignored");
  return info;
}

}  // namespace attendre::gguf
