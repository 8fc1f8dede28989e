#include "kernels/activation.hpp"
#include "core/try.hpp"

namespace attendre::kernels {

// The GLSL block declares the same words flat (ATT_ROWS expands to four uints).
static_assert(offsetof(ActivationParams, x) == 16 && sizeof(ActivationParams) == 64);

static_assert(static_cast<uint32_t>(ActivationKind::silu) == kActSilu);
static_assert(static_cast<uint32_t>(ActivationKind::gelu_tanh) == kActGeluTanh);
static_assert(static_cast<uint32_t>(ActivationKind::relu) == kActRelu);

Result<Activation> Activation::create(Context& context, vk::DescriptorArena& arena, const KernelPlan& plan,
                                      ActivationKind kind, bool gated, vk::BufferBinding input, vk::BufferBinding out,
                                      MemoryStorage output) {
  Activation a;
  a.plan_ = plan;
  a.kind_ = kind;
  a.gated_ = gated;
  a.half_out_ = output == MemoryStorage::f16;
  ATTENDRE_TRY_ASSIGN(const bool same, in_place(input, out, "activation"));
  ATTENDRE_REQUIRE(!(same && a.half_out_), "activation: fp16 output rows cannot be written in place");
  if (same) {
    ATTENDRE_TRY_ASSIGN(a.kernel_, Kernel::make<ActivationParams>(context, arena, ShaderId::activation_in_place,
                                                                  with_fold({plan.workgroup}, plan), {input}));
  } else {
    ATTENDRE_TRY_ASSIGN(a.kernel_, Kernel::make<ActivationParams>(
                                       context, arena, a.half_out_ ? ShaderId::activation_f16 : ShaderId::activation,
                                       with_fold({plan.workgroup}, plan), {input, out}));
  }
  return a;
}

Status Activation::record(vk::CommandRecorder& recorder, const Args& args) const {
  if (args.rows == 0 || args.cols == 0) return {};
  ATTENDRE_TRY(check_rows(args.x, args.rows, args.cols, false, "activation input"));
  if (gated_) ATTENDRE_TRY(check_rows(args.up, args.rows, args.cols, false, "activation up"));
  const uint32_t out_words = half_out_ ? ceil_div(args.cols, 2u) : args.cols;  // each invocation writes one word
  ATTENDRE_TRY(check_rows(args.out, args.rows, out_words, true, "activation output"));
  ActivationParams p{};
  p.rows = args.rows;
  p.cols = args.cols;
  p.kind = static_cast<uint32_t>(kind_);
  p.gated = gated_ ? 1u : 0u;
  p.x = args.x;
  p.up = gated_ ? args.up : args.x;
  p.out = args.out;
  const Grid g = fold_groups(uint64_t{args.rows} * ceil_div(out_words, plan_.workgroup), plan_);
  kernel_.dispatch(recorder, p, g.x, g.y);
  return {};
}

}  // namespace attendre::kernels
