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

  // Two ranges in one dispatch (check_finite_pair): values_b's floats flag flag_b.
  static Result<CheckFinite> create_pair(Context& context, vk::DescriptorArena& arena, const KernelPlan& plan,
                                         vk::BufferBinding values, vk::BufferBinding flag,
                                         vk::BufferBinding values_b, vk::BufferBinding flag_b);

  // Records the check of `count` floats from word `first` of the values
  // binding (and, for a pair, `count_b` from word `first_b` of values_b).
  void record(vk::CommandRecorder& recorder, uint32_t first, uint32_t count, uint32_t first_b = 0,
              uint32_t count_b = 0) const;

 private:
  KernelPlan plan_;
  bool pair_ = false;
  Kernel kernel_;
};

}  // namespace attendre::kernels
