// Row references and grid folding shared by the transformer block kernels.
// Row r of a tensor lives at word  offset + ((first + r) % capacity) * stride
// of its buffer binding (shaders/interface/rows.h, shaders/rows.glsl), so
// that the rows of one call may wrap around a ring buffer.
#pragma once

#include "interface/rows.h"
#include "kernels/kernel_plan.hpp"
#include "core/try.hpp"

#include <attendre/error.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace attendre::kernels {

// Checks that `rows` rows of `cols` words addressed by `ref` are well formed:
// the ring index never overflows 32 bits, and (for outputs) no two rows
// share a slot or overlap, which would race. Fails with invalid_argument.
inline Status check_rows(const RowRef& ref, uint32_t rows, uint32_t cols, bool output, const char* name) {
  const std::string what = std::string(name) + " rows: ";
  ATTENDRE_REQUIRE(ref.capacity > 0, what + "capacity must be positive");
  ATTENDRE_REQUIRE(uint64_t{ref.first} + rows <= 0xFFFFFFFFull, what + "first + rows must fit 32 bits");
  if (!output || rows < 2) return {};
  ATTENDRE_REQUIRE(rows <= ref.capacity, what + "more rows than ring slots");
  ATTENDRE_REQUIRE(ref.stride >= cols, what + "stride smaller than a row");
  return {};
}

// Workgroup counts of one dispatch: `groups` logical workgroups folded into
// x * y physical ones within the device's per-dimension limits. Shaders loop
// over logical groups g = group_index() + k * group_count() (rows.glsl),
// which assume that the grid is plan.max_groups_x wide whenever it has more
// than one row, and that `groups` < 2^31 (each group covers at least one
// word of a binding, which holds < 2^30).
struct Grid {
  uint32_t x = 0, y = 0;
};
inline Grid fold_groups(uint64_t groups, const KernelPlan& plan) {
  if (groups == 0) return {};
  const uint32_t x = static_cast<uint32_t>(std::min<uint64_t>(groups, plan.max_groups_x));
  const uint32_t y = static_cast<uint32_t>(std::min<uint64_t>((groups + x - 1) / x, plan.max_groups_y));
  return {x, y};
}

// Specialization constant ids of the fold's extents (FOLD_X, FOLD_Y in rows.glsl).
constexpr uint32_t kFoldXId = ATT_FOLD_X_ID, kFoldYId = ATT_FOLD_Y_ID;
static_assert(kFoldYId == kFoldXId + 1, "with_fold appends the two extents in order");

// The specialization of a kernel that folds its grid: `spec` (constants
// 0, 1, ...; the ids up to 29 it leaves out are unused by those shaders),
// then the plan's fold extents, so that the shader finds its logical group
// from gl_WorkGroupID alone, however CommandRecorder cuts the grid.
inline std::vector<uint32_t> with_fold(std::vector<uint32_t> spec, const KernelPlan& plan) {
  spec.resize(kFoldXId, 0);
  spec.push_back(plan.max_groups_x);
  spec.push_back(plan.max_groups_y);
  return spec;
}

}  // namespace attendre::kernels
