#include "kernels/rope.hpp"
#include "core/fail.hpp"

#include <cmath>

namespace attendre::kernels {

// The GLSL block declares the same words flat (ATT_ROWS expands to four uints).
static_assert(offsetof(RopeParams, x) == 28 && sizeof(RopeParams) == 60);

Rope::Rope(Context& context, vk::DescriptorArena& arena, const KernelPlan& plan, RopeLayout layout,
           vk::BufferBinding x, vk::BufferBinding positions)
    : plan_(plan), layout_(layout) {
  kernel_ = Kernel::make<RopeParams>(context, arena, ShaderId::rope, {plan.workgroup}, {x, positions});
}

void Rope::record(vk::CommandRecorder& recorder, const Args& args) const {
  require(args.rope_dims % 2 == 0 && args.rope_dims <= args.head_dim, "rope_dims must be even and <= head_dim");
  require(args.theta > 0.0 && std::isfinite(args.theta), "rope theta must be positive");
  if (args.rows == 0 || args.heads == 0 || args.rope_dims == 0) return;
  check_rows(args.x, args.rows, args.heads * args.head_dim, true, "rope X");
  check_rows(args.positions, args.rows, 1, false, "rope positions");
  RopeParams p{};
  p.rows = args.rows;
  p.heads = args.heads;
  p.head_dim = args.head_dim;
  p.rope_dims = args.rope_dims;
  p.neox = layout_ == RopeLayout::neox ? 1u : 0u;
  // theta^(-2 / rope_dims) as hi + lo floats: the shader raises it to the
  // i-th power in double-float arithmetic.
  const double ratio = std::pow(args.theta, -2.0 / args.rope_dims);
  p.ratio_hi = static_cast<float>(ratio);
  p.ratio_lo = static_cast<float>(ratio - static_cast<double>(p.ratio_hi));
  p.x = args.x;
  p.pos = args.positions;
  const uint64_t columns = uint64_t{args.heads} * (args.rope_dims / 2);
  const Grid g = fold_groups(ceil_div(columns, plan_.workgroup) * uint64_t{ceil_div(args.rows, kRopeRowsPerGroup)}, plan_);
  kernel_.dispatch(recorder, p, g.x, g.y);
}

}  // namespace attendre::kernels
