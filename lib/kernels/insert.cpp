#include "kernels/insert.hpp"

namespace attendre::kernels {

InsertKernels::InsertKernels(Context& context, vk::DescriptorArena& arena, const KernelPlan& plan,
                             const InsertBuffers& b, uint32_t capacity, uint32_t max_insert)
    : plan_(plan) {
  stats_ = Kernel::make<InsertParams>(context, arena, ShaderId::score_stats, {plan.workgroup}, {b.kv, b.chunk});
  plan_kernel_ =
      Kernel::make<InsertParams>(context, arena, ShaderId::insert_plan, {plan.insert_workgroup}, {b.lists, b.chunk});
  scatter_ = Kernel::make<InsertParams>(context, arena, ShaderId::insert_scatter, {plan.workgroup}, {b.kv, b.chunk});
  if (b.evicted.buffer)
    copy_ = Kernel::make<InsertParams>(context, arena, ShaderId::evict_copy, {plan.workgroup},
                                       {b.lists, b.kv, b.chunk, b.evicted});
  select_ = Select(context, arena, plan, Select::Source::evict, b.kv, b.chunk, b.lists, capacity + max_insert,
                   max_insert);
}

void InsertKernels::evict_copy(vk::CommandRecorder& recorder, const InsertParams& p) const {
  copy_.dispatch(recorder, p, ceil_div(p.kv_row, plan_.workgroup), p.victims);
}

void InsertKernels::scatter(vk::CommandRecorder& recorder, const InsertParams& p) const {
  scatter_.dispatch(recorder, p, ceil_div(p.kv_row, plan_.workgroup), p.rows);
}

}  // namespace attendre::kernels
