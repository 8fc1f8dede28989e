// Host-side sampling from a row of logits, identical on every platform: a
// local generator and explicit orderings (ties always go to the smaller id).
#include "core/number_text.hpp"
#include "core/try.hpp"

#include <attendre/generate.hpp>

#include <algorithm>
#include <cmath>
#include <numeric>

namespace attendre {

Status SamplingOptions::check() const {
  ATTENDRE_REQUIRE(std::isfinite(temperature) && temperature >= 0.0,
                   "sampling temperature must be a finite number >= 0, got " + shortest_text(temperature));
  ATTENDRE_REQUIRE(std::isfinite(top_p) && top_p > 0.0 && top_p <= 1.0,
                   "top_p must lie in (0, 1], got " + shortest_text(top_p));
  return {};
}

Result<Sampler> Sampler::create(const SamplingOptions& options) {
  ATTENDRE_TRY(options.check());
  return Sampler(options, Checked{});
}

Sampler::Sampler(const SamplingOptions& options, Checked) : options_(options), state_(options.seed) {}

double Sampler::uniform() {
  // splitmix64: a full-period generator whose every output bit is well mixed.
  uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  z ^= z >> 31;
  return static_cast<double>(z >> 11) * 0x1.0p-53;
}

Result<uint32_t> Sampler::sample(std::span<const float> logits) {
  ATTENDRE_REQUIRE(!logits.empty(), "sampling from an empty row of logits");
  // NaN and +inf are a computation gone wrong; -inf is a token masked out
  // (a logit bias, a grammar) and weighs nothing, as in llama.cpp's samplers,
  // as long as one token is left to pick.
  const auto broken = std::find_if(logits.begin(), logits.end(), [](float x) { return std::isnan(x) || x == INFINITY; });
  if (broken != logits.end())
    return Status(ErrorCode::numerical_error, "sampling from logits holding a non-finite value: token " +
                                                  std::to_string(broken - logits.begin()) + " has " +
                                                  (std::isnan(*broken) ? "NaN" : "inf"));
  if (std::all_of(logits.begin(), logits.end(), [](float x) { return x == -INFINITY; }))
    return Status(ErrorCode::numerical_error, "sampling from logits that are all -inf: no token is left to pick");
  // max_element keeps the first of equal maxima: the smaller id.
  const auto best = static_cast<uint32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
  if (options_.temperature == 0.0) return best;

  const auto n = static_cast<uint32_t>(logits.size());
  weights_.resize(n);
  const double top = logits[best];
  for (uint32_t i = 0; i < n; ++i) weights_[i] = std::exp((static_cast<double>(logits[i]) - top) / options_.temperature);
  order_.resize(n);
  std::iota(order_.begin(), order_.end(), 0u);
  uint32_t kept = n;
  double total = std::accumulate(weights_.begin(), weights_.end(), 0.0);
  if (options_.top_p < 1.0) {
    // The nucleus: most likely first, cut where the mass reaches top_p.
    std::sort(order_.begin(), order_.end(), [&](uint32_t a, uint32_t b) {
      return weights_[a] != weights_[b] ? weights_[a] > weights_[b] : a < b;
    });
    const double target = options_.top_p * total;
    double mass = 0.0;
    for (kept = 0; kept < n && mass < target;) mass += weights_[order_[kept++]];
    total = mass;
  }
  double u = uniform() * total;
  for (uint32_t k = 0; k < kept; ++k) {
    u -= weights_[order_[k]];
    if (u < 0.0) return order_[k];
  }
  return order_[kept - 1];  // rounding left u a hair above the kept mass
}

}  // namespace attendre
