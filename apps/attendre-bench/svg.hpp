// --svg DIR: hand-written plots, no dependencies.
//   kernel_efficiency.svg  one bar per kernel and shape: roofline efficiency (log scale)
//   step_time.svg          ms per step vs document length: bounded and dense (log-log)
#pragma once

#include "results.hpp"

#include <string>

namespace bench {

// Creates `dir` if needed; each file is written whole or not at all.
void write_svgs(const Results& results, const std::string& dir);

}  // namespace bench
