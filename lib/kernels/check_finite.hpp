// Flags NaN or infinity among a range of floats (check_finite.comp).
#pragma once

#include "kernels/kernel_plan.hpp"
#include "interface/finite.h"
#include "kernels/kernel.hpp"

#include <attendre/status.hpp>

namespace attendre::kernels {

class CheckFinite {
 public:
  CheckFinite() = default;
  // Bindings: values (floats, read), flag (one word, set when a value is not finite).
  static Result<CheckFinite> create(Context& context, vk::DescriptorArena& arena, const KernelPlan& plan,
                                    vk::BufferBinding values, vk::BufferBinding flag);

  // Records the check of `count` floats from word `first` of the values binding.
  void record(vk::CommandRecorder& recorder, uint32_t first, uint32_t count) const;

 private:
  KernelPlan plan_;
  Kernel kernel_;
};

}  // namespace attendre::kernels
