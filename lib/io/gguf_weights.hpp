// A WeightSource over an open GGUF file: tensors by their GGUF names (the
// stack's names are GGUF's), each handed out as a span into the file's
// mapping in its own encoding. GGUF lists dims innermost first; the stack's
// shapes are row-major, outermost first, so [cols, rows] in the file is
// [rows][cols] here.
#pragma once

#include "io/gguf.hpp"

#include <attendre/tensor.hpp>

#include <string>
#include <vector>

namespace attendre::gguf {

// The row-major shape of a tensor (its GGUF dims reversed).
std::vector<uint64_t> row_major_shape(const TensorInfo& tensor);
// "[64, 512]": a shape as messages print it.
std::string shape_text(std::span<const uint64_t> shape);

class FileWeights final : public WeightSource {
 public:
  // `file` must outlive this source.
  explicit FileWeights(const File& file) : file_(file) {}

  // Throws malformed_input naming the tensor when the file holds it with
  // another shape, unsupported when its encoding is one attendre does not decode.
  std::optional<ElementType> type_of(const std::string& name, std::span<const uint64_t> shape) override;
  std::optional<TensorView> tensor(const std::string& name, std::span<const uint64_t> shape) override;

 private:
  const TensorInfo* find(const std::string& name, std::span<const uint64_t> shape, ElementType& type) const;
  const File& file_;
};

}  // namespace attendre::gguf
