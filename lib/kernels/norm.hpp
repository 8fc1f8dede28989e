// RMSNorm or LayerNorm of `rows` rows of `dim` floats (norm.comp), one
// workgroup per row, or of each of a row's `segments` pieces of `dim` floats
// (per-head q/k norms: a row of heads * head_dim, every head scaled by the
// same g[head_dim]); Y may be X itself (in place).
#pragma once

#include "kernels/kernel_plan.hpp"
#include "interface/norm.h"
#include "kernels/kernel.hpp"

#include <attendre/status.hpp>
#include "kernels/rows.hpp"

#include <attendre/transformer.hpp>

namespace attendre::kernels {

class Norm {
 public:
  struct Args {
    uint32_t rows = 0, dim = 0;
    float eps = 1e-5f;
    uint32_t g_offset = 0;  // words of the weight binding: g[dim]
    uint32_t b_offset = 0;  // words of the weight binding: b[dim] (LayerNorm only)
    RowRef x, y;            // y may equal x (in place); otherwise disjoint rows
    uint32_t segments = 1;  // pieces of dim floats per row, each normalized alone (fp32 output only)
  };

  Norm() = default;
  // Bindings: x (X rows), weights (g and b), y (Y rows, written; either x
  // itself, which normalizes in place, or disjoint from it). `output` f16
  // writes Y rows as fp16 pairs packed in words (rows of ceil(dim / 2)
  // words), rounded to nearest even (fp16 activations; never in place).
  static Result<Norm> create(Context& context, vk::DescriptorArena& arena, const KernelPlan& plan, NormKind kind,
                             vk::BufferBinding x, vk::BufferBinding weights, vk::BufferBinding y,
                             MemoryStorage output = MemoryStorage::f32);

  // Records the normalization; no barrier (the caller orders it).
  Status record(vk::CommandRecorder& recorder, const Args& args) const;

 private:
  KernelPlan plan_;
  bool half_out_ = false;
  Kernel kernel_;
};

}  // namespace attendre::kernels
