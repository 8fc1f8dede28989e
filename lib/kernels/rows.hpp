// Row references and grid folding shared by the transformer block kernels.
// Row r of a tensor lives at word  offset + ((first + r) % capacity) * stride
// of its buffer binding (shaders/interface/rows.h, shaders/rows.glsl), so
// that the rows of one call may wrap around a ring buffer.
#pragma once

#include "gpu/kernel_plan.hpp"

#include <attendre/error.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>

namespace attendre::kernels {

// Where the rows of one tensor live. The default is plain contiguous rows
// from word 0 with stride 0: set stride (words per row) before use.
struct RowRef {
  uint32_t offset = 0;    // words from the start of the binding
  uint32_t stride = 0;    // words between consecutive ring slots
  uint32_t first = 0;     // ring slot of row 0
  uint32_t capacity = 0xFFFFFFFFu;  // ring slots (0xFFFFFFFF: no wrap)

  // Contiguous rows of `stride` words starting at word `offset`.
  static RowRef contiguous(uint32_t stride, uint32_t offset = 0) { return {offset, stride, 0, 0xFFFFFFFFu}; }
  // Rows in a ring of `capacity` slots of `stride` words from `offset`, row 0 in slot `first`.
  static RowRef ring(uint32_t stride, uint32_t capacity, uint32_t first, uint32_t offset = 0) {
    return {offset, stride, first, capacity};
  }
  // Word of row r (host mirror of shaders/rows.glsl).
  uint64_t word(uint32_t r) const { return offset + uint64_t{(first + r) % capacity} * stride; }
};
// The GLSL side declares the same four words as flat push-constant fields.
static_assert(sizeof(RowRef) == 16 && alignof(RowRef) == 4);
static_assert(offsetof(RowRef, stride) == 4 && offsetof(RowRef, first) == 8 && offsetof(RowRef, capacity) == 12);

// Checks that `rows` rows of `cols` words addressed by `ref` are well formed:
// the ring index never overflows 32 bits, and (for outputs) no two rows
// share a slot or overlap, which would race.
inline void check_rows(const RowRef& ref, uint32_t rows, uint32_t cols, bool output, const char* name) {
  const std::string what = std::string(name) + " rows: ";
  require(ref.capacity > 0, what + "capacity must be positive");
  require(uint64_t{ref.first} + rows <= 0xFFFFFFFFull, what + "first + rows must fit 32 bits");
  if (!output || rows < 2) return;
  require(rows <= ref.capacity, what + "more rows than ring slots");
  require(ref.stride >= cols, what + "stride smaller than a row");
}

// Workgroup counts of one dispatch: `groups` logical workgroups folded into
// x * y physical ones within the device's per-dimension limits. Shaders loop
// over logical groups g = group_index() + k * group_count() (rows.glsl).
struct Grid {
  uint32_t x = 0, y = 0;
};
inline Grid fold_groups(uint64_t groups, const gpu::KernelPlan& plan) {
  if (groups == 0) return {};
  const uint32_t x = static_cast<uint32_t>(std::min<uint64_t>(groups, plan.max_groups_x));
  const uint32_t y = static_cast<uint32_t>(std::min<uint64_t>((groups + x - 1) / x, plan.max_groups_y));
  return {x, y};
}

}  // namespace attendre::kernels
