// The layer kernels (score, top-K, attend, policy updates, eviction
// select, compaction) over a sweep of shapes: each shape is one gpu::Layer
// streamed until its K/V memory is full and queries flow, then timed with
// GPU timestamps, median of repeats after warm-up.
#pragma once

#include "options.hpp"
#include "results.hpp"

#include <attendre/context.hpp>

namespace bench {

void sweep_layer_kernels(attendre::Context& context, const Options& options, Results& results);

}  // namespace bench
