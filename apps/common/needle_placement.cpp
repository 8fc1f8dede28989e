#include "needle_placement.hpp"

namespace attendre::apps {

std::vector<int64_t> spread_positions(uint32_t count, double extent, double jitter, Rng& rng) {
  std::vector<int64_t> positions;
  if (count == 0) return positions;
  const double span = extent / count;
  for (uint32_t i = 0; i < count; ++i) {
    // Truncation toward zero on both terms: the demo's stream (and its
    // tests' expectations) were drawn with exactly this arithmetic.
    const auto offset = static_cast<int64_t>((rng.uniform() - 0.5) * jitter * span);
    positions.push_back(static_cast<int64_t>((i + 0.5) * span) + offset);
  }
  return positions;
}

}  // namespace attendre::apps
