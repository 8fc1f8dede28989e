#include "kernels/activation.hpp"

namespace attendre::kernels {

// The GLSL block declares the same words flat (ATT_ROWS expands to four uints).
static_assert(offsetof(ActivationParams, x) == 16 && sizeof(ActivationParams) == 64);

static_assert(static_cast<uint32_t>(ActivationKind::silu) == kActSilu);
static_assert(static_cast<uint32_t>(ActivationKind::gelu_tanh) == kActGeluTanh);
static_assert(static_cast<uint32_t>(ActivationKind::relu) == kActRelu);

Activation::Activation(Context& context, vk::DescriptorArena& arena, const KernelPlan& plan,
                       ActivationKind kind, bool gated, vk::BufferBinding input, vk::BufferBinding out)
    : plan_(plan), kind_(kind), gated_(gated) {
  if (in_place(input, out, "activation"))
    kernel_ = Kernel::make<ActivationParams>(context, arena, ShaderId::activation_in_place, {plan.workgroup}, {input});
  else
    kernel_ = Kernel::make<ActivationParams>(context, arena, ShaderId::activation, {plan.workgroup}, {input, out});
}

void Activation::record(vk::CommandRecorder& recorder, const Args& args) const {
  if (args.rows == 0 || args.cols == 0) return;
  check_rows(args.x, args.rows, args.cols, false, "activation input");
  if (gated_) check_rows(args.up, args.rows, args.cols, false, "activation up");
  check_rows(args.out, args.rows, args.cols, true, "activation output");
  ActivationParams p{};
  p.rows = args.rows;
  p.cols = args.cols;
  p.kind = static_cast<uint32_t>(kind_);
  p.gated = gated_ ? 1u : 0u;
  p.x = args.x;
  p.up = gated_ ? args.up : args.x;
  p.out = args.out;
  const Grid g = fold_groups(uint64_t{args.rows} * ceil_div(args.cols, plan_.workgroup), plan_);
  kernel_.dispatch(recorder, p, g.x, g.y);
}

}  // namespace attendre::kernels
