#include "kernels/soft_cap.hpp"
#include "core/try.hpp"

#include <cmath>

namespace attendre::kernels {

// The GLSL block declares the same words flat (ATT_ROWS expands to four uints).
static_assert(offsetof(SoftCapParams, x) == 12 && sizeof(SoftCapParams) == 28);

Result<SoftCap> SoftCap::create(Context& context, vk::DescriptorArena& arena, const KernelPlan& plan,
                                vk::BufferBinding x) {
  SoftCap s;
  s.plan_ = plan;
  ATTENDRE_TRY_ASSIGN(s.kernel_, Kernel::make<SoftCapParams>(context, arena, ShaderId::soft_cap,
                                                             with_fold({plan.workgroup}, plan), {x}));
  return s;
}

Status SoftCap::record(vk::CommandRecorder& recorder, const Args& args) const {
  if (args.rows == 0 || args.cols == 0) return {};
  ATTENDRE_REQUIRE(args.cap > 0.0f && std::isfinite(args.cap), "soft-cap must be a positive finite float");
  ATTENDRE_TRY(check_rows(args.x, args.rows, args.cols, true, "soft-cap rows"));
  SoftCapParams p{};
  p.rows = args.rows;
  p.cols = args.cols;
  p.cap = args.cap;
  p.x = args.x;
  const Grid g = fold_groups(uint64_t{args.rows} * ceil_div(args.cols, plan_.workgroup), plan_);
  kernel_.dispatch(recorder, p, g.x, g.y);
  return {};
}

}  // namespace attendre::kernels
