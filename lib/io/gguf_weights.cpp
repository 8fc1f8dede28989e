#include "io/gguf_weights.hpp"

#include "core/fail.hpp"
#include "io/gguf_source.hpp"

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

const TensorInfo* FileWeights::find(const std::string& name, std::span<const uint64_t> shape, ElementType& type) const {
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
  return find(name, shape, type) ? std::optional<ElementType>(type) : std::nullopt;
}

std::optional<TensorView> FileWeights::tensor(const std::string& name, std::span<const uint64_t> shape) {
  ElementType type{};
  const TensorInfo* info = find(name, shape, type);
  if (!info) return std::nullopt;
  return TensorView{type, file_.data(*info)};
}

}  // namespace attendre::gguf
