// The whole stack for named presets (mobile, desktop): ms per step and
// tokens/s by wall clock with no readback, the time split by kernel from
// GPU timestamps, the orchestration overhead (step minus its kernels), and
// the block kernels (matmul, norm, rope, ...) measured inside the stack.
#pragma once

#include "options.hpp"
#include "results.hpp"

#include <attendre/context.hpp>

namespace bench {

void run_presets(attendre::Context& context, const Options& options, Results& results);

}  // namespace bench
