// Rotary position embedding on rows laid out [heads][head_dim] (rope.comp):
// pair i < rope_dims / 2 of each head turns by positions::rope_angle, the
// float angle llama.cpp forms, from an angle table bound with the kernel
// (rope_angle_table). That float angle is reduced to a turn in double-float
// arithmetic (within ~1e-7 rad up to |angle| = 2^24, ~1e-5 at 2^31), plus the
// device's sin/cos error on [-pi, pi] (see rope.comp).
#pragma once

#include "core/positions.hpp"
#include "kernels/kernel_plan.hpp"
#include "interface/rope.h"
#include "kernels/kernel.hpp"

#include <attendre/status.hpp>
#include "kernels/rows.hpp"

#include <attendre/transformer.hpp>

#include <optional>
#include <span>
#include <vector>

namespace attendre::kernels {

// The angle table rope.comp reads: theta_scale, freq_scale, then the
// divisors (kRopeTableHeaderWords + rope_dims / 2 floats).
std::vector<float> rope_angle_table(const positions::RopeAngles& angles);

class Rope {
 public:
  struct Args {
    uint32_t rows = 0, heads = 0, head_dim = 0;
    uint32_t rope_dims = 0;     // even, <= head_dim; dims >= rope_dims stay as they are
    RowRef x;                   // input rows of heads * head_dim floats
    std::optional<RowRef> y;    // output rows in the same binding (none: x, in place)
    RowRef positions;           // int32 position of row r at word positions.word(r)
    std::optional<int32_t> fixed_position;  // every row turns by this instead
    uint32_t table_offset = 0;  // words of the rows' angle table in its binding
  };

  Rope() = default;
  // Bindings: x (rows, read and written), positions (int32), the frequency table.
  static Result<Rope> create(Context& context, vk::DescriptorArena& arena, const KernelPlan& plan, RopeLayout layout,
                             vk::BufferBinding x, vk::BufferBinding positions, vk::BufferBinding table);

  // rope_pair: also turns second rows, in place, in the same dispatch (a
  // block's keys with its queries). Bindings as create's, then one holding
  // both the second rows and their positions (a chunk's keys and positions:
  // four storage buffers in all, every device's minimum).
  static Result<Rope> create_pair(Context& context, vk::DescriptorArena& arena, const KernelPlan& plan,
                                  RopeLayout layout, vk::BufferBinding x, vk::BufferBinding positions,
                                  vk::BufferBinding table, vk::BufferBinding rows_b);

  // Records the rotation; no barrier (the caller orders it).
  Status record(vk::CommandRecorder& recorder, const Args& args) const;
  // A pair kernel's one dispatch: `a` as record's, `b` in place (no y) with
  // a's rows, head_dim, rope_dims and table, its own heads and positions
  // (no fixed position; b.x and b.positions both in rows_b).
  Status record_pair(vk::CommandRecorder& recorder, const Args& a, const Args& b) const;

 private:
  Result<RopeParams> params(const Args& args) const;

  KernelPlan plan_;
  RopeLayout layout_ = RopeLayout::normal;
  bool pair_ = false;
  Kernel kernel_;
};

}  // namespace attendre::kernels
