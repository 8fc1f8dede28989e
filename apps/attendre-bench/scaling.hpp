// Per-step cost as the document grows: a bounded ATTENDRE layer (fixed M,
// top-K) against dense attention (every position kept and attended) on
// the same device, shape and kernels, and the length where they cross.
#pragma once

#include "options.hpp"
#include "results.hpp"

#include <attendre/context.hpp>

namespace bench {

void run_scaling(attendre::Context& context, const Options& options, Results& results);

}  // namespace bench
