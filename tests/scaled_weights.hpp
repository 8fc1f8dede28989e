// RandomWeights with some tensors scaled, for the tests of values that leave
// the float32 (or fp16) range on the device: products past float32, norms
// whose statistics overflow, rows past fp16 storage.
#pragma once

#include <attendre/tensor.hpp>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

namespace attendre::test {

// Every tensor whose name contains one of `parts` is multiplied by
// `factor`, in double and then rounded to float32, so that a factor past
// float32 may bring values near its maximum (RandomWeights' matrices are
// well below 1).
class ScaledWeights final : public WeightSource {
 public:
  ScaledWeights(std::vector<std::string> parts, double factor, uint64_t seed)
      : parts_(std::move(parts)), factor_(factor), inner_(seed) {}
  Result<std::optional<ElementType>> type_of(const std::string&, std::span<const uint64_t>) override {
    return std::optional<ElementType>(ElementType::f32);
  }
  Result<std::optional<TensorView>> tensor(const std::string& name, std::span<const uint64_t> shape) override {
    values_ = inner_.values(name, shape);
    const bool scaled = std::any_of(parts_.begin(), parts_.end(),
                                    [&](const std::string& part) { return name.find(part) != std::string::npos; });
    if (scaled)
      for (float& x : values_) x = static_cast<float>(static_cast<double>(x) * factor_);
    return std::optional<TensorView>(TensorView{ElementType::f32, std::as_bytes(std::span<const float>(values_))});
  }

 private:
  std::vector<std::string> parts_;
  double factor_;
  RandomWeights inner_;
  std::vector<float> values_;
};

}  // namespace attendre::test
