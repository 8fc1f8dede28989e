#include "kernels/check_finite.hpp"

#include "kernels/rows.hpp"
#include "core/try.hpp"

namespace attendre::kernels {

Result<CheckFinite> CheckFinite::create(Context& context, vk::DescriptorArena& arena, const KernelPlan& plan,
                                        vk::BufferBinding values, vk::BufferBinding flag) {
  CheckFinite check;
  check.plan_ = plan;
  ATTENDRE_TRY_ASSIGN(check.kernel_, Kernel::make<FiniteParams>(context, arena, ShaderId::check_finite,
                                                                with_fold({plan.workgroup}, plan), {values, flag}));
  return check;
}

void CheckFinite::record(vk::CommandRecorder& recorder, uint32_t first, uint32_t count) const {
  if (count == 0) return;
  const Grid g = fold_groups(ceil_div(count, plan_.workgroup), plan_);
  kernel_.dispatch(recorder, FiniteParams{first, count}, g.x, g.y);
}

}  // namespace attendre::kernels
