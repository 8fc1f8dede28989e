// Token embedding lookup (embedding.comp): out[r] = scale * table[ids[r]], the table
// in any weight encoding (shaders/weights.glsl), fp32 rows out. One kernel
// serves one part of a table split by rows: ids [first_id, first_id + vocab).
// The part at first_id 0 writes a row of zeros for every id outside it, so it
// must be recorded first.
#pragma once

#include "kernels/kernel_plan.hpp"
#include "interface/embedding.h"
#include "kernels/kernel.hpp"

#include <attendre/status.hpp>
#include "kernels/rows.hpp"

#include <attendre/transformer.hpp>

namespace attendre::kernels {

class Embedding {
 public:
  struct Args {
    uint32_t rows = 0, dim = 0, vocab = 0;  // vocab: the rows this part holds
    uint32_t table_offset = 0;  // where the part starts: elements of F32/F16/BF16, bytes (even) of block types
    RowRef ids;                 // uint32 id of row r at word ids.word(r)
    RowRef out;                 // rows of dim floats
    uint32_t first_id = 0;      // the id of the part's row 0
    float scale = 1.0f;         // out = scale * table row (StackConfig::embedding_scale)
  };

  Embedding() = default;
  // Bindings: ids, table, out (written). Fails (unsupported) for an encoding
  // without a kernel.
  static Result<Embedding> create(Context& context, vk::DescriptorArena& arena, const KernelPlan& plan,
                                  ElementType table_type, vk::BufferBinding ids, vk::BufferBinding table,
                                  vk::BufferBinding out);

  // Records the lookup; no barrier (the caller orders it).
  Status record(vk::CommandRecorder& recorder, const Args& args) const;

 private:
  KernelPlan plan_;
  ElementType type_ = ElementType::f32;
  Kernel kernel_;
};

}  // namespace attendre::kernels
