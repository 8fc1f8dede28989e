// The human-readable report, printed section by section as the run goes.
#pragma once

#include "results.hpp"

#include <cstdio>

namespace bench {

void print_device(std::FILE* out, const DeviceInfo& device);
void print_limits(std::FILE* out, const Limits& limits);
void print_kernels(std::FILE* out, const Results& results);
void print_presets(std::FILE* out, const Results& results);
void print_scaling(std::FILE* out, const Scaling& scaling);
void print_skipped(std::FILE* out, const Results& results);

// "M=2048 K=64 ..." from a kernel shape.
std::string shape_label(const Shape& shape);

}  // namespace bench
