// Elementwise activation of rows (activation.comp): out = act(x), or
// out = act(gate) * up when gated. silu, gelu_tanh and relu.
#pragma once

#include "kernels/kernel_plan.hpp"
#include "interface/activation.h"
#include "kernels/kernel.hpp"

#include <attendre/status.hpp>
#include "kernels/rows.hpp"

#include <attendre/transformer.hpp>

namespace attendre::kernels {

class Activation {
 public:
  struct Args {
    uint32_t rows = 0, cols = 0;
    RowRef x;    // the input (the gate when gated)
    RowRef up;   // gated only; may address the same buffer as x (e.g. [gate | up] rows)
    RowRef out;  // may be x's or up's rows themselves (in place), else disjoint from them;
                 // with fp16 output, rows of ceil(cols / 2) words
  };

  Activation() = default;
  // Bindings: input (x, or gate and up), out (written; either input itself,
  // which works in place, or disjoint from it). `output` f16 writes out rows
  // as fp16 pairs packed in words, rounded to nearest even (fp16
  // activations; never in place).
  static Result<Activation> create(Context& context, vk::DescriptorArena& arena, const KernelPlan& plan,
                                   ActivationKind kind, bool gated, vk::BufferBinding input, vk::BufferBinding out,
                                   MemoryStorage output = MemoryStorage::f32);

  // Records the activation; no barrier (the caller orders it).
  Status record(vk::CommandRecorder& recorder, const Args& args) const;

 private:
  KernelPlan plan_;
  ActivationKind kind_ = ActivationKind::silu;
  bool gated_ = false;
  bool half_out_ = false;
  Kernel kernel_;
};

}  // namespace attendre::kernels
