#include "io/gguf_weights.hpp"

#include "core/fail.hpp"
#include "io/gguf_source.hpp"
#include "io/quant.hpp"

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
  std::string name = naming_ ? naming_(stack_name) : std::string();
  return name.empty() ? stack_name : name;
}

const TensorInfo* FileWeights::find(const std::string& stack_name, std::span<const uint64_t> shape,
                                    ElementType& type) const {
  const std::string name = file_name(stack_name);
  const TensorInfo* info = file_.find_tensor(name);
  if (!info) return nullptr;
  const std::string where = file_.path().string() + ": tensor " + detail::quote_name(name);
  const std::vector<uint64_t> held = row_major_shape(*info);
  if (!std::equal(held.begin(), held.end(), shape.begin(), shape.end()))
    fail(ErrorCode::malformed_input,
         where + " has shape " + shape_text(held) + ", the model's hyper-parameters make it " + shape_text(shape));
  const std::optional<ElementType> known = element_type(static_cast<uint32_t>(info->type));
  if (!known)
    fail(ErrorCode::unsupported, where + " is " + to_string(info->type) + ", an encoding attendre does not decode");
  type = *known;
  return info;
}

std::optional<ElementType> FileWeights::type_of(const std::string& name, std::span<const uint64_t> shape) {
  ElementType type{};
  if (!find(name, shape, type)) return std::nullopt;
  return scaled_.count(name) ? ElementType::f32 : type;
}

std::optional<TensorView> FileWeights::tensor(const std::string& name, std::span<const uint64_t> shape) {
  ElementType type{};
  const TensorInfo* info = find(name, shape, type);
  if (!info) return std::nullopt;
  const auto scale = scaled_.find(name);
  if (scale == scaled_.end()) return TensorView{type, file_.data(*info)};
  const std::vector<double> values = dequantize(info->type, file_.data(*info));
  scaled_values_.assign(values.size(), 0.0f);
  for (size_t i = 0; i < values.size(); ++i) scaled_values_[i] = static_cast<float>(values[i] * scale->second);
  return TensorView{ElementType::f32, std::as_bytes(std::span<const float>(scaled_values_))};
}

}  // namespace attendre::gguf
