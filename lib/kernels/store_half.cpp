#include "kernels/store_half.hpp"
#include "core/try.hpp"

namespace attendre::kernels {

Result<StoreHalfRows> StoreHalfRows::create(Context& context, vk::DescriptorArena& arena, const KernelPlan& plan,
                                            vk::BufferBinding source, vk::BufferBinding ring) {
  StoreHalfRows store;
  store.plan_ = plan;
  ATTENDRE_TRY_ASSIGN(store.kernel_, Kernel::make<StoreHalfParams>(context, arena, ShaderId::store_half_rows,
                                                                   {plan.workgroup}, {source, ring}));
  return store;
}

void StoreHalfRows::record(vk::CommandRecorder& recorder, const StoreHalfParams& p) const {
  if (p.rows == 0) return;
  kernel_.dispatch(recorder, p, ceil_div(p.stored_stride / 2, plan_.workgroup), p.rows);
}

}  // namespace attendre::kernels
