// A WeightSource over an open GGUF file: tensors by the stack's names, each
// handed out as a span into the file's mapping in its own encoding. The
// stack's names are GGUF's for llama-like files; an architecture that names
// them otherwise (T5's "attn_o", its decoder's self- and cross-attention
// halves of one layer) gives a TensorNaming. GGUF lists dims innermost
// first; the stack's shapes are row-major, outermost first, so [cols, rows]
// in the file is [rows][cols] here.
#pragma once

#include "gguf/gguf.hpp"

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

// A stack matrix that is a range of rows of a fused file tensor (phi3's
// attn_qkv: q, k and v rows; its ffn_up: gate rows, then up rows). It is
// handed out as a view of those rows' bytes in the file's mapping: a row of
// any encoding is whole blocks, so a row range is a byte range, and the
// fused tensor is neither copied nor loaded twice (each row goes to the one
// device matrix that reads it).
struct RowSlice {
  std::string tensor;       // the file's fused tensor
  uint64_t first_row = 0;   // of the slice, in the fused tensor
  uint64_t rows = 0;        // of the slice
  uint64_t fused_rows = 0;  // of the whole fused tensor, whose columns are the slice's
};
using RowSlices = std::map<std::string, RowSlice>;  // by stack name

class FileWeights final : public WeightSource {
 public:
  // `file` must outlive this source. `scaled`: stack names of vectors handed
  // out multiplied by a factor, as f32 (a factor the architecture applies
  // where the stack has no place for it, such as T5's tied LM head).
  // `slices`: stack matrices read as rows of fused file tensors.
  explicit FileWeights(const File& file, TensorNaming naming = {}, std::map<std::string, double> scaled = {},
                       RowSlices slices = {})
      : file_(file), naming_(std::move(naming)), scaled_(std::move(scaled)), slices_(std::move(slices)) {}

  // The file's name of stack tensor `stack_name` (a fused tensor's for a slice).
  std::string file_name(const std::string& stack_name) const;
  // The shape the file's tensor must have for stack tensor `stack_name` of
  // `shape`: `shape` itself, or the whole fused tensor's for a slice.
  std::vector<uint64_t> file_shape(const std::string& stack_name, std::span<const uint64_t> shape) const;

  // Fail malformed_input naming the file's tensor when the file holds it
  // with another shape, unsupported when its encoding is one attendre does
  // not decode; nullopt when the file has no such tensor.
  Result<std::optional<ElementType>> type_of(const std::string& name, std::span<const uint64_t> shape) override;
  Result<std::optional<TensorView>> tensor(const std::string& name, std::span<const uint64_t> shape) override;

 private:
  Result<const TensorInfo*> find(const std::string& name, std::span<const uint64_t> shape, ElementType& type) const;
  const File& file_;
  TensorNaming naming_;
  std::map<std::string, double> scaled_;
  RowSlices slices_;
  std::vector<float> scaled_values_;  // the scaled tensor tensor() returned last
};

}  // namespace attendre::gguf
