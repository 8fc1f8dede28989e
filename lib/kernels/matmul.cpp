#include "kernels/matmul.hpp"

#include "vulkan/buffer.hpp"
#include "core/fail.hpp"

#include <algorithm>

namespace attendre::kernels {

// The GLSL block declares the same words flat (ATT_ROWS expands to four uints).
static_assert(offsetof(MatmulParams, a) == 32 && sizeof(MatmulParams) == 80);

namespace {

// Elements of `in` each matvec invocation should own at least, so that the
// reduction's barriers are amortized; lanes = pow2 >= in / kMatvecElements.
constexpr uint32_t kMatvecElements = 8;

// Rows one matmul_direct invocation computes for its output: enough to
// reuse the weight row from cache, few enough that one invocation's loops
// stay far below lavapipe's iteration limit (ROWS * in / 4).
constexpr uint32_t kDirectRows = 8;

}  // namespace

Matmul::Matmul(Context& context, vk::DescriptorArena& arena, const KernelPlan& plan, ElementType weights,
               vk::BufferBinding a, vk::BufferBinding w, vk::BufferBinding c, vk::BufferBinding r)
    : plan_(plan) {
  const std::string what = "matmul over '" + (w.buffer ? w.buffer->label() : std::string("weights")) + "'";
  const ShaderId gemm = weight_variant(context, {ShaderId::matmul_f32, ShaderId::matmul_f16}, weights, what);
  const ShaderId matvec = weight_variant(context, {ShaderId::matvec_f32, ShaderId::matvec_f16}, weights, what);
  const ShaderId direct =
      weight_variant(context, {ShaderId::matmul_direct_f32, ShaderId::matmul_direct_f16}, weights, what);
  // Without a separate R, the residual (if any) is read from C itself, and
  // binding 3 takes A: it must hold a buffer, and one the dispatch only reads.
  residual_in_c_ = !r.buffer;
  if (!r.buffer) r = a;
  gemm_ = Kernel::make<MatmulParams>(context, arena, gemm,
                                     {plan.matmul_workgroup, plan.matmul_tile_rows, plan.matmul_tile_outputs,
                                      plan.matmul_tile_in, plan.matmul_micro_rows, plan.matmul_micro_outputs},
                                     {a, w, c, r});
  matvec_ = Kernel::make<MatmulParams>(context, arena, matvec,
                                       {plan.matvec_workgroup}, {a, w, c, r});
  if (plan.direct)
    direct_ = Kernel::make<MatmulParams>(context, arena, direct,
                                         {plan.workgroup, kDirectRows}, {a, w, c, r});
}

MatmulParams Matmul::params(const Args& args) const {
  check_rows(args.a, args.rows, args.in, false, "matmul A");
  check_rows(args.c, args.rows, args.out, true, "matmul C");
  if (args.residual) check_rows(args.r, args.rows, args.out, false, "matmul R");
  if (args.residual && residual_in_c_)
    require(args.r == args.c,
            "matmul: a residual added in place needs R rows to be the C rows (bind a separate R otherwise)");
  MatmulParams p{};
  p.rows = args.rows;
  p.in_dim = args.in;
  p.out_dim = args.out;
  p.w_offset = args.w_offset;
  p.bias_offset = args.bias_offset;
  p.has_bias = args.bias ? 1u : 0u;
  p.has_residual = !args.residual ? kResidualNone : residual_in_c_ ? kResidualInC : kResidualSeparate;
  p.a = args.a;
  p.c = args.c;
  p.r = args.r;
  // Matvec: enough lanes per output that each owns ~kMatvecElements of `in`.
  p.lanes = std::min(plan_.matvec_workgroup, next_pow2(std::max(1u, ceil_div(args.in, kMatvecElements))));
  return p;
}

Grid Matmul::grid(const Args& args) const {
  if (plan_.direct)
    return fold_groups(uint64_t{ceil_div(args.out, plan_.workgroup)} * ceil_div(args.rows, kDirectRows), plan_);
  if (uses_matvec(args.rows)) {
    const uint32_t per_group = plan_.matvec_workgroup / params(args).lanes;
    return fold_groups(ceil_div(args.out, per_group), plan_);
  }
  return fold_groups(uint64_t{ceil_div(args.out, plan_.matmul_tile_outputs)} * ceil_div(args.rows, plan_.matmul_tile_rows),
                     plan_);
}

void Matmul::record(vk::CommandRecorder& recorder, const Args& args) const {
  if (args.rows == 0 || args.out == 0) return;
  const MatmulParams p = params(args);
  const Grid g = grid(args);
  (plan_.direct ? direct_ : uses_matvec(args.rows) ? matvec_ : gemm_).dispatch(recorder, p, g.x, g.y);
}

}  // namespace attendre::kernels
