#include "kernels/norm.hpp"
#include "core/fail.hpp"

namespace attendre::kernels {

// The GLSL block declares the same words flat (ATT_ROWS expands to four uints).
static_assert(offsetof(NormParams, x) == 20 && sizeof(NormParams) == 52);

Norm::Norm(Context& context, vk::DescriptorArena& arena, const KernelPlan& plan, NormKind kind,
           vk::BufferBinding x, vk::BufferBinding weights, vk::BufferBinding y)
    : plan_(plan) {
  const bool layer = kind == NormKind::layer;
  if (in_place(x, y, "norm"))
    kernel_ = Kernel::make<NormParams>(context, arena, layer ? ShaderId::norm_layer_in_place : ShaderId::norm_rms_in_place,
                                       {plan.norm_workgroup}, {x, weights});
  else
    kernel_ = Kernel::make<NormParams>(context, arena, layer ? ShaderId::norm_layer : ShaderId::norm_rms,
                                       {plan.norm_workgroup}, {x, weights, y});
}

void Norm::record(vk::CommandRecorder& recorder, const Args& args) const {
  if (args.rows == 0 || args.dim == 0) return;
  require(args.eps >= 0.0f, "norm eps must not be negative");
  check_rows(args.x, args.rows, args.dim, false, "norm X");
  check_rows(args.y, args.rows, args.dim, true, "norm Y");
  NormParams p{};
  p.rows = args.rows;
  p.dim = args.dim;
  p.eps = args.eps;
  p.g_offset = args.g_offset;
  p.b_offset = args.b_offset;
  p.x = args.x;
  p.y = args.y;
  const Grid g = fold_groups(args.rows, plan_);
  kernel_.dispatch(recorder, p, g.x, g.y);
}

}  // namespace attendre::kernels
