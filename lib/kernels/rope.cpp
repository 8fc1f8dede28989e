#include "kernels/rope.hpp"
#include "core/try.hpp"


namespace attendre::kernels {

// The GLSL block declares the same words flat (ATT_ROWS expands to four uints).
static_assert(offsetof(RopeParams, x) == 36 && sizeof(RopeParams) == 84);

std::vector<float> rope_angle_table(const positions::RopeAngles& angles) {
  std::vector<float> table{angles.theta_scale, angles.freq_scale};
  static_assert(kRopeTableHeaderWords == 2);
  table.insert(table.end(), angles.divisors.begin(), angles.divisors.end());
  return table;
}

Result<Rope> Rope::create(Context& context, vk::DescriptorArena& arena, const KernelPlan& plan, RopeLayout layout,
                          vk::BufferBinding x, vk::BufferBinding positions, vk::BufferBinding table) {
  Rope rope;
  rope.plan_ = plan;
  rope.layout_ = layout;
  ATTENDRE_TRY_ASSIGN(rope.kernel_, Kernel::make<RopeParams>(context, arena, ShaderId::rope,
                                                             with_fold({plan.workgroup}, plan), {x, positions, table}));
  return rope;
}

Status Rope::record(vk::CommandRecorder& recorder, const Args& args) const {
  ATTENDRE_REQUIRE(args.rope_dims % 2 == 0 && args.rope_dims <= args.head_dim,
                   "rope_dims must be even and <= head_dim");
  const RowRef y = args.y.value_or(args.x);
  const bool in_place = y == args.x;
  if (args.rows == 0 || args.heads == 0 || (args.rope_dims == 0 && in_place)) return {};
  const uint32_t width = args.heads * args.head_dim;
  ATTENDRE_TRY(check_rows(args.x, args.rows, width, false, "rope X"));
  ATTENDRE_TRY(check_rows(y, args.rows, width, true, "rope Y"));
  if (!args.fixed_position) ATTENDRE_TRY(check_rows(args.positions, args.rows, 1, false, "rope positions"));
  RopeParams p{};
  p.rows = args.rows;
  p.heads = args.heads;
  p.head_dim = args.head_dim;
  p.rope_dims = args.rope_dims;
  p.neox = layout_ == RopeLayout::neox ? 1u : 0u;
  p.use_fixed = args.fixed_position ? 1u : 0u;
  p.fixed_position = args.fixed_position.value_or(0);
  p.table_offset = args.table_offset;
  // Out of place, the dims that do not turn are copied by columns of two.
  p.head_columns = args.rope_dims / 2 + (in_place ? 0 : (args.head_dim - args.rope_dims + 1) / 2);
  p.x = args.x;
  p.y = y;
  p.pos = args.positions;
  const uint64_t columns = uint64_t{args.heads} * p.head_columns;
  const Grid g = fold_groups(ceil_div(columns, plan_.workgroup) * uint64_t{ceil_div(args.rows, kRopeRowsPerGroup)}, plan_);
  kernel_.dispatch(recorder, p, g.x, g.y);
  return {};
}

}  // namespace attendre::kernels
