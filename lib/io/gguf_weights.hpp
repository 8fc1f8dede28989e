// A WeightSource over an open GGUF file: tensors by the stack's names, each
// handed out as a span into the file's mapping in its own encoding. The
// stack's names are GGUF's for llama-like files; an architecture that names
// them otherwise (T5's "attn_o", its decoder's self- and cross-attention
// halves of one layer) gives a TensorNaming. GGUF lists dims innermost
// first; the stack's shapes are row-major, outermost first, so [cols, rows]
// in the file is [rows][cols] here.
#pragma once

#include "io/gguf.hpp"

#include <attendre/tensor.hpp>

#include <functional>
#include <map>
#include <string>
#include <vector>

namespace attendre::gguf {

// The row-major shape of a tensor (its GGUF dims reversed).
std::vector<uint64_t> row_major_shape(const TensorInfo& tensor);
// "[64, 512]": a shape as messages print it.
std::string shape_text(std::span<const uint64_t> shape);

// A stack's tensor name to the file's; empty: the file uses the stack's name.
using TensorNaming = std::function<std::string(const std::string& stack_name)>;

class FileWeights final : public WeightSource {
 public:
  // `file` must outlive this source. `scaled`: stack names of vectors handed
  // out multiplied by a factor, as f32 (a factor the architecture applies
  // where the stack has no place for it, such as T5's tied LM head).
  explicit FileWeights(const File& file, TensorNaming naming = {}, std::map<std::string, double> scaled = {})
      : file_(file), naming_(std::move(naming)), scaled_(std::move(scaled)) {}

  // The file's name of stack tensor `stack_name`.
  std::string file_name(const std::string& stack_name) const;

  // Fail malformed_input naming the file's tensor when the file holds it
  // with another shape, unsupported when its encoding is one attendre does
  // not decode; nullopt when the file has no such tensor.
  Result<std::optional<ElementType>> try_type_of(const std::string& name, std::span<const uint64_t> shape) override;
  Result<std::optional<TensorView>> try_tensor(const std::string& name, std::span<const uint64_t> shape) override;

 private:
  Result<const TensorInfo*> find(const std::string& name, std::span<const uint64_t> shape, ElementType& type) const;
  const File& file_;
  TensorNaming naming_;
  std::map<std::string, double> scaled_;
  std::vector<float> scaled_values_;  // the scaled tensor try_tensor() returned last
};

}  // namespace attendre::gguf
