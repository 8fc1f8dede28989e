#include "kernels/add.hpp"
#include "core/try.hpp"

namespace attendre::kernels {

// The GLSL block declares the same words flat (ATT_ROWS expands to four uints).
static_assert(offsetof(AddParams, a) == 8 && sizeof(AddParams) == 56);

Result<Add> Add::create(Context& context, vk::DescriptorArena& arena, const KernelPlan& plan, vk::BufferBinding a,
                        vk::BufferBinding b, vk::BufferBinding c) {
  Add add;
  add.plan_ = plan;
  if (!b.buffer) b = a;
  ATTENDRE_TRY_ASSIGN(const bool same, in_place(a, c, "add"));
  if (same) {
    ATTENDRE_TRY_ASSIGN(add.kernel_, Kernel::make<AddParams>(context, arena, ShaderId::add_in_place,
                                                             with_fold({plan.workgroup}, plan), {a, b}));
  } else {
    ATTENDRE_TRY_ASSIGN(add.kernel_, Kernel::make<AddParams>(context, arena, ShaderId::add,
                                                             with_fold({plan.workgroup}, plan), {a, b, c}));
  }
  return add;
}

Status Add::record(vk::CommandRecorder& recorder, const Args& args) const {
  if (args.rows == 0 || args.cols == 0) return {};
  ATTENDRE_TRY(check_rows(args.a, args.rows, args.cols, false, "add A"));
  ATTENDRE_TRY(check_rows(args.b, args.rows, args.cols, false, "add B"));
  ATTENDRE_TRY(check_rows(args.c, args.rows, args.cols, true, "add C"));
  AddParams p{};
  p.rows = args.rows;
  p.cols = args.cols;
  p.a = args.a;
  p.b = args.b;
  p.c = args.c;
  const Grid g = fold_groups(uint64_t{args.rows} * ceil_div(args.cols, plan_.workgroup), plan_);
  kernel_.dispatch(recorder, p, g.x, g.y);
  return {};
}

}  // namespace attendre::kernels
