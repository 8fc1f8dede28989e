#include "kernels/rope.hpp"
#include "core/try.hpp"


namespace attendre::kernels {

// The GLSL block declares the same words flat (ATT_ROWS expands to four uints).
static_assert(offsetof(RopeParams, x) == 36 && offsetof(RopeParams, x_b) == 88 && sizeof(RopeParams) == 120);

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

Result<Rope> Rope::create_pair(Context& context, vk::DescriptorArena& arena, const KernelPlan& plan, RopeLayout layout,
                               vk::BufferBinding x, vk::BufferBinding positions, vk::BufferBinding table,
                               vk::BufferBinding rows_b) {
  Rope rope;
  rope.plan_ = plan;
  rope.layout_ = layout;
  rope.pair_ = true;
  ATTENDRE_TRY_ASSIGN(rope.kernel_, Kernel::make<RopeParams>(context, arena, ShaderId::rope_pair,
                                                             with_fold({plan.workgroup}, plan),
                                                             {x, positions, table, rows_b}));
  return rope;
}

Status Rope::record(vk::CommandRecorder& recorder, const Args& args) const {
  ATTENDRE_REQUIRE(!pair_, "rope: a pair kernel records with record_pair");
  const RowRef y = args.y.value_or(args.x);
  if (args.rows == 0 || args.heads == 0 || (args.rope_dims == 0 && y == args.x)) return {};
  ATTENDRE_TRY_ASSIGN(const RopeParams p, params(args));
  const Grid g = fold_groups(ceil_div(uint64_t{args.heads} * p.head_columns, plan_.workgroup) *
                                 uint64_t{ceil_div(args.rows, kRopeRowsPerGroup)},
                             plan_);
  kernel_.dispatch(recorder, p, g.x, g.y);
  return {};
}

Status Rope::record_pair(vk::CommandRecorder& recorder, const Args& a, const Args& b) const {
  ATTENDRE_REQUIRE(pair_, "rope: record_pair needs a kernel made by create_pair");
  ATTENDRE_REQUIRE(!b.y && !b.fixed_position && b.rows == a.rows && b.head_dim == a.head_dim &&
                       b.rope_dims == a.rope_dims && b.table_offset == a.table_offset,
                   "rope pair: the second rows turn in place by their own positions, with the first rows' count, "
                   "head size, rotary dims and table");
  if (a.rows == 0 || (a.heads == 0 && b.heads == 0) || (a.rope_dims == 0 && !a.y)) return {};
  ATTENDRE_TRY_ASSIGN(RopeParams p, params(a));
  ATTENDRE_TRY_ASSIGN(const RopeParams second, params(b));
  p.heads_b = b.heads;
  p.x_b = second.x;
  p.pos_b = second.pos;
  const uint64_t row_groups = ceil_div(a.rows, kRopeRowsPerGroup);
  const uint64_t groups = (ceil_div(uint64_t{a.heads} * p.head_columns, plan_.workgroup) +
                           ceil_div(uint64_t{b.heads} * (b.rope_dims / 2), plan_.workgroup)) *
                          row_groups;
  const Grid g = fold_groups(groups, plan_);
  kernel_.dispatch(recorder, p, g.x, g.y);
  return {};
}

Result<RopeParams> Rope::params(const Args& args) const {
  ATTENDRE_REQUIRE(args.rope_dims % 2 == 0 && args.rope_dims <= args.head_dim,
                   "rope_dims must be even and <= head_dim");
  const RowRef y = args.y.value_or(args.x);
  const bool in_place = y == args.x;
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
  return p;
}

}  // namespace attendre::kernels
