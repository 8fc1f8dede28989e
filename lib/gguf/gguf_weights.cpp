#include "gguf/gguf_weights.hpp"

#include "core/printable.hpp"
#include "core/try.hpp"
#include "gguf/gguf_source.hpp"
#include "gguf/quant.hpp"

#include <algorithm>

namespace attendre::gguf {

std::vector<uint64_t> row_major_shape(const TensorInfo& tensor) {
  std::vector<uint64_t> shape(tensor.dims.rbegin(), tensor.dims.rend());
  // Outer dims of 1 say nothing about the layout ([64, 1] is a vector of 64).
  while (shape.size() > 1 && shape.front() == 1) shape.erase(shape.begin());
  return shape;
}

std::string shape_text(std::span<const uint64_t> shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i) text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + "]";
}

std::string FileWeights::file_name(const std::string& stack_name) const {
  if (const auto slice = slices_.find(stack_name); slice != slices_.end()) return slice->second.tensor;
  std::string name = naming_ ? naming_(stack_name) : std::string();
  return name.empty() ? stack_name : name;
}

std::vector<uint64_t> FileWeights::file_shape(const std::string& stack_name, std::span<const uint64_t> shape) const {
  const auto slice = slices_.find(stack_name);
  if (slice == slices_.end() || shape.size() != 2) return {shape.begin(), shape.end()};
  return {slice->second.fused_rows, shape[1]};
}

Result<const TensorInfo*> FileWeights::find(const std::string& stack_name, std::span<const uint64_t> shape,
                                    ElementType& type) const {
  const std::string name = file_name(stack_name);
  const TensorInfo* info = file_.find_tensor(name);
  if (!info) return static_cast<const TensorInfo*>(nullptr);
  const std::string where = file_.path().string() + ": tensor " + quote(name);
  if (const auto slice = slices_.find(stack_name); slice != slices_.end()) {
    const RowSlice& r = slice->second;
    if (shape.size() != 2 || shape.front() != r.rows)
      return malformed_input(file_.path().string() + ": " + quote(stack_name) + " is rows [" +
                             std::to_string(r.first_row) + ", " + std::to_string(r.first_row + r.rows) + ") of tensor " +
                             quote(name) + ", not a tensor of shape " + shape_text(shape));
  }
  const std::vector<uint64_t> held = row_major_shape(*info), expected = file_shape(stack_name, shape);
  if (held != expected)
    return malformed_input(where + " has shape " + shape_text(held) + ", the model's hyper-parameters make it " +
                           shape_text(expected));
  const std::optional<ElementType> known = element_type(static_cast<uint32_t>(info->type));
  if (!known)
    return Status(ErrorCode::unsupported,
                  where + " is " + to_string(info->type) + ", an encoding attendre does not decode");
  type = *known;
  return info;
}

Result<std::optional<ElementType>> FileWeights::type_of(const std::string& name,
                                                        std::span<const uint64_t> shape) {
  ElementType type{};
  ATTENDRE_TRY_ASSIGN(const TensorInfo* info, find(name, shape, type));
  if (!info) return std::optional<ElementType>();
  return std::optional<ElementType>(scaled_.count(name) ? ElementType::f32 : type);
}

Result<std::optional<TensorView>> FileWeights::tensor(const std::string& name, std::span<const uint64_t> shape) {
  ElementType type{};
  ATTENDRE_TRY_ASSIGN(const TensorInfo* info, find(name, shape, type));
  if (!info) return std::optional<TensorView>();
  ATTENDRE_TRY_ASSIGN(std::span<const std::byte> data, file_.data(*info));
  if (const auto slice = slices_.find(name); slice != slices_.end()) {
    // find() checked the fused shape: each of its rows holds the same bytes.
    const uint64_t row_bytes = data.size() / slice->second.fused_rows;
    data = data.subspan(slice->second.first_row * row_bytes, shape.front() * row_bytes);
  }
  const auto scale = scaled_.find(name);
  if (scale == scaled_.end()) return std::optional<TensorView>(TensorView{type, data});
  ATTENDRE_TRY_ASSIGN(const std::vector<double> values, dequantize(info->type, data));
  scaled_values_.assign(values.size(), 0.0f);
  for (size_t i = 0; i < values.size(); ++i) scaled_values_[i] = static_cast<float>(values[i] * scale->second);
  return std::optional<TensorView>(TensorView{ElementType::f32, std::as_bytes(std::span<const float>(scaled_values_))});
}

}  // namespace attendre::gguf
