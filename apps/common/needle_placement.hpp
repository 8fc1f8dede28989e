// Where generated inputs plant their needles: the demo's heavily attended
// keys and the reader's haystack facts are placed by the same rule, so both
// tools spread their needles over the input the same way.
#pragma once

#include "rng.hpp"

#include <cstdint>
#include <vector>

namespace attendre::apps {

// `count` positions in [0, extent): needle i sits at the centre of the i-th
// of `count` equal spans, moved by up to +-jitter/2 of a span (jitter in
// [0, 1]: 0 keeps the centres, 1 lets a needle wander over its whole span).
// Ascending and distinct whenever extent >= count. Draws one uniform per needle.
std::vector<int64_t> spread_positions(uint32_t count, double extent, double jitter, Rng& rng);

}  // namespace attendre::apps
