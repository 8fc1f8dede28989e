#include "kernels/check_finite.hpp"

#include "kernels/rows.hpp"
#include "core/try.hpp"

#include <algorithm>

namespace attendre::kernels {

Result<CheckFinite> CheckFinite::create(Context& context, vk::DescriptorArena& arena, const KernelPlan& plan,
                                        vk::BufferBinding values, vk::BufferBinding flag) {
  CheckFinite check;
  check.plan_ = plan;
  ATTENDRE_TRY_ASSIGN(check.kernel_, Kernel::make<FiniteParams>(context, arena, ShaderId::check_finite,
                                                                with_fold({plan.workgroup}, plan), {values, flag}));
  return check;
}

Result<CheckFinite> CheckFinite::create_pair(Context& context, vk::DescriptorArena& arena, const KernelPlan& plan,
                                             vk::BufferBinding values, vk::BufferBinding flag,
                                             vk::BufferBinding values_b, vk::BufferBinding flag_b) {
  CheckFinite check;
  check.plan_ = plan;
  check.pair_ = true;
  ATTENDRE_TRY_ASSIGN(check.kernel_, Kernel::make<FiniteParams>(context, arena, ShaderId::check_finite_pair,
                                                                with_fold({plan.workgroup}, plan),
                                                                {values, flag, values_b, flag_b}));
  return check;
}

void CheckFinite::record(vk::CommandRecorder& recorder, uint32_t first, uint32_t count, uint32_t first_b,
                         uint32_t count_b) const {
  if (!pair_) count_b = 0;
  const uint32_t most = std::max(count, count_b);
  if (most == 0) return;
  const Grid g = fold_groups(ceil_div(most, plan_.workgroup), plan_);
  kernel_.dispatch(recorder, FiniteParams{first, count, first_b, count_b}, g.x, g.y);
}

}  // namespace attendre::kernels
