// store_half_rows.comp: a chunk's fp32 queries into the rows of an fp16 Q
// ring (rounded on the device as the reference rounds).
#pragma once

#include "kernels/kernel_plan.hpp"
#include "interface/store_half.h"
#include "kernels/kernel.hpp"

#include <attendre/status.hpp>

namespace attendre::kernels {

class StoreHalfRows {
 public:
  StoreHalfRows() = default;
  // Bindings: the fp32 source rows (read), the ring's fp16 rows (written).
  static Result<StoreHalfRows> create(Context& context, vk::DescriptorArena& arena, const KernelPlan& plan,
                                      vk::BufferBinding source, vk::BufferBinding ring);

  // Rows 0..rows-1 of the source into ring rows first, first + 1, ... (mod capacity).
  void record(vk::CommandRecorder& recorder, const StoreHalfParams& params) const;

 private:
  KernelPlan plan_;
  Kernel kernel_;
};

}  // namespace attendre::kernels
