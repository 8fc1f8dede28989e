// C = A + B row by row (add.comp), for residual adds that Matmul's R input
// does not cover.
#pragma once

#include "kernels/kernel_plan.hpp"
#include "interface/add.h"
#include "kernels/kernel.hpp"

#include <attendre/status.hpp>
#include "kernels/rows.hpp"

namespace attendre::kernels {

class Add {
 public:
  struct Args {
    uint32_t rows = 0, cols = 0;
    RowRef a, b, c;  // c may be a's or b's rows themselves (in place), else disjoint from them
  };

  Add() = default;
  // Bindings: a, b (empty: a's), c (written; either a itself, which adds in
  // place, or disjoint from a and b).
  static Result<Add> create(Context& context, vk::DescriptorArena& arena, const KernelPlan& plan, vk::BufferBinding a,
                            vk::BufferBinding b, vk::BufferBinding c);

  // Records the sum; no barrier (the caller orders it).
  Status record(vk::CommandRecorder& recorder, const Args& args) const;

 private:
  KernelPlan plan_;
  Kernel kernel_;
};

}  // namespace attendre::kernels
