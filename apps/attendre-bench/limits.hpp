// The device's own limits, measured in the same run as everything else:
// copy bandwidth (bench_copy.comp) and FMA throughput (bench_fma.comp),
// both timed with GPU timestamps, median of repeats, best of several sizes.
#pragma once

#include "results.hpp"

#include <attendre/context.hpp>

namespace bench {

// The device's name, driver and the limits the bench and the kernels use.
DeviceInfo describe_device(const attendre::Context& context);

Limits measure_limits(attendre::Context& context, bool quick);

}  // namespace bench
