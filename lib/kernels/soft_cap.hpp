// Soft-capping of rows in place (soft_cap.comp): x = cap * tanh(x / cap), the
// final logits of a stack with StackConfig::logit_soft_cap (Gemma 2).
#pragma once

#include "kernels/kernel_plan.hpp"
#include "interface/soft_cap.h"
#include "kernels/kernel.hpp"

#include <attendre/status.hpp>
#include "kernels/rows.hpp"

namespace attendre::kernels {

class SoftCap {
 public:
  struct Args {
    uint32_t rows = 0, cols = 0;
    float cap = 0.0f;  // > 0
    RowRef x;          // rows of cols floats, read and written
  };

  SoftCap() = default;
  // Bindings: x (read and written).
  static Result<SoftCap> create(Context& context, vk::DescriptorArena& arena, const KernelPlan& plan,
                                vk::BufferBinding x);

  // Records the capping; no barrier (the caller orders it).
  Status record(vk::CommandRecorder& recorder, const Args& args) const;

 private:
  KernelPlan plan_;
  Kernel kernel_;
};

}  // namespace attendre::kernels
