// Deterministic pseudo-random weights: the same tensor name and seed give
// the same values on every machine (a local generator, not <random>'s
// implementation-defined distributions).
#include <attendre/error.hpp>
#include <attendre/tensor.hpp>

#include <cmath>

namespace attendre {
namespace {

uint64_t fnv1a(const std::string& text, uint64_t seed) {
  uint64_t h = 1469598103934665603ull ^ seed;
  for (unsigned char c : text) h = (h ^ c) * 1099511628211ull;
  return h;
}

// splitmix64: a full-period generator with well-mixed output bits.
uint64_t next(uint64_t& state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

std::vector<float> RandomWeights::values(const std::string& name, std::span<const uint64_t> shape) const {
  uint64_t count = 1;
  for (uint64_t d : shape) count *= d;
  std::vector<float> out(count);
  uint64_t state = fnv1a(name, seed_);
  auto uniform = [&] { return 2.0 * static_cast<double>(next(state) >> 11) * 0x1.0p-53 - 1.0; };  // [-1, 1)
  const bool norm_gain = ends_with(name, "norm.weight");
  const bool shift = ends_with(name, ".bias");
  // Divisors, as llama3's and LongRoPE's: in [1, 8].
  const bool rope_factor =
      name == "rope_freqs.weight" || name == "rope_factors_short.weight" || name == "rope_factors_long.weight";
  const double bound = shape.size() >= 2 ? std::sqrt(3.0 / static_cast<double>(shape.back())) : std::sqrt(3.0);
  for (float& x : out) {
    double v = uniform();
    if (norm_gain) v = 1.0 + 0.1 * v;
    else if (rope_factor) v = 4.5 + 3.5 * v;
    else if (shift) v = 0.02 * v;
    else v *= bound;
    x = static_cast<float>(v);
  }
  return out;
}

Result<std::optional<ElementType>> RandomWeights::type_of(const std::string&, std::span<const uint64_t>) {
  return std::optional<ElementType>(ElementType::f32);
}

Result<std::optional<TensorView>> RandomWeights::tensor(const std::string& name, std::span<const uint64_t> shape) {
  last_ = values(name, shape);
  return std::optional<TensorView>(TensorView{ElementType::f32, std::as_bytes(std::span<const float>(last_))});
}

}  // namespace attendre
