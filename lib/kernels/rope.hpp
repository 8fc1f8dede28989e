// Rotary position embedding in place on rows laid out [heads][head_dim]
// (rope.comp): pair i < rope_dims / 2 of each head turns by
// position * theta^(-2i / rope_dims). The angle is reduced in double-float
// arithmetic: within ~1e-6 rad of exact up to |position| = 2^24 and ~2e-5 rad
// at 2^31, plus the device's sin/cos error on [-pi, pi] (see rope.comp).
#pragma once

#include "kernels/kernel_plan.hpp"
#include "interface/rope.h"
#include "kernels/kernel.hpp"
#include "kernels/rows.hpp"

#include <attendre/transformer.hpp>

namespace attendre::kernels {

class Rope {
 public:
  struct Args {
    uint32_t rows = 0, heads = 0, head_dim = 0;
    uint32_t rope_dims = 0;  // even, <= head_dim; dims >= rope_dims stay as they are
    double theta = 10000.0;  // frequency base, > 0
    RowRef x;                // rows of heads * head_dim floats, rotated in place
    RowRef positions;        // int32 position of row r at word positions.word(r)
  };

  Rope() = default;
  // Bindings: x (rows, read and written), positions (int32).
  Rope(Context& context, vk::DescriptorArena& arena, const KernelPlan& plan, RopeLayout layout,
       vk::BufferBinding x, vk::BufferBinding positions);

  // Records the rotation; no barrier (the caller orders it).
  void record(vk::CommandRecorder& recorder, const Args& args) const;

 private:
  KernelPlan plan_;
  RopeLayout layout_ = RopeLayout::normal;
  Kernel kernel_;
};

}  // namespace attendre::kernels
