#include "kernels/norm.hpp"
#include "core/try.hpp"

namespace attendre::kernels {

// The GLSL block declares the same words flat (ATT_ROWS expands to four uints).
static_assert(offsetof(NormParams, x) == 24 && sizeof(NormParams) == 56);

Result<Norm> Norm::create(Context& context, vk::DescriptorArena& arena, const KernelPlan& plan, NormKind kind,
                          vk::BufferBinding x, vk::BufferBinding weights, vk::BufferBinding y,
                          MemoryStorage output) {
  Norm norm;
  norm.plan_ = plan;
  norm.half_out_ = output == MemoryStorage::f16;
  const bool layer = kind == NormKind::layer;
  ATTENDRE_TRY_ASSIGN(const bool same, in_place(x, y, "norm"));
  ATTENDRE_REQUIRE(!(same && norm.half_out_), "norm: fp16 output rows cannot be written in place");
  if (same) {
    ATTENDRE_TRY_ASSIGN(
        norm.kernel_,
        Kernel::make<NormParams>(context, arena, layer ? ShaderId::norm_layer_in_place : ShaderId::norm_rms_in_place,
                                 with_fold({plan.norm_workgroup}, plan), {x, weights}));
  } else {
    ATTENDRE_TRY_ASSIGN(norm.kernel_, Kernel::make<NormParams>(
                                          context, arena,
                                          norm.half_out_ ? (layer ? ShaderId::norm_layer_f16 : ShaderId::norm_rms_f16)
                                                         : (layer ? ShaderId::norm_layer : ShaderId::norm_rms),
                                          with_fold({plan.norm_workgroup}, plan), {x, weights, y}));
  }
  return norm;
}

Status Norm::record(vk::CommandRecorder& recorder, const Args& args) const {
  if (args.rows == 0 || args.dim == 0) return {};
  ATTENDRE_REQUIRE(args.eps >= 0.0f, "norm eps must not be negative");
  ATTENDRE_REQUIRE(args.segments >= 1, "norm segments must be at least 1");
  ATTENDRE_REQUIRE(args.segments == 1 || !half_out_, "norm: fp16 output rows are not normalized in segments");
  const uint64_t pieces = uint64_t{args.rows} * args.segments, row_words = uint64_t{args.dim} * args.segments;
  ATTENDRE_REQUIRE(pieces <= 0x7FFFFFFFull && row_words <= 0xFFFFFFFFull, "norm: rows * segments must fit 31 bits");
  ATTENDRE_TRY(check_rows(args.x, args.rows, static_cast<uint32_t>(row_words), false, "norm X"));
  ATTENDRE_TRY(check_rows(args.y, args.rows, half_out_ ? ceil_div(args.dim, 2u) : static_cast<uint32_t>(row_words),
                          true, "norm Y"));
  NormParams p{};
  p.rows = args.rows;
  p.dim = args.dim;
  p.eps = args.eps;
  p.g_offset = args.g_offset;
  p.b_offset = args.b_offset;
  p.segments = args.segments;
  p.x = args.x;
  p.y = args.y;
  const Grid g = fold_groups(pieces, plan_);
  kernel_.dispatch(recorder, p, g.x, g.y);
  return {};
}

}  // namespace attendre::kernels
