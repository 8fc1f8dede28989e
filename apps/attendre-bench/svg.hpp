// --svg DIR: hand-written plots, no dependencies.
//   kernel_efficiency.svg  one bar per kernel and shape: roofline efficiency (log scale)
//   step_time.svg          ms per step vs document length: bounded and dense (log-log)
#pragma once

#include "results.hpp"

#include <string>

namespace bench {

inline constexpr const char* kEfficiencyPlotFile = "kernel_efficiency.svg";
inline constexpr const char* kScalingPlotFile = "step_time.svg";  // when the scaling sweep ran

std::string efficiency_plot(const Results& results);
std::string scaling_plot(const Scaling& scaling);

}  // namespace bench
