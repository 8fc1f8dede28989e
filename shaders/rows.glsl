// Row addressing (interface/rows.h) and the folded grid of the transformer
// block kernels.
#ifndef ATTENDRE_ROWS_GLSL
#define ATTENDRE_ROWS_GLSL
#include "interface/rows.h"

// Word of row r: offset + ((first + r) % capacity) * stride.
uint row_word(uint offset, uint stride, uint first, uint capacity, uint r) {
  return offset + ((first + r) % capacity) * stride;
}
// Word of row r of the push-constant row reference `p` (declared by ATT_ROWS(p)).
#define ROW_WORD(p, r) row_word(pc.p##_offset, pc.p##_stride, pc.p##_first, pc.p##_capacity, (r))

// Logical workgroups are folded into a 2-D grid within the dispatch limits
// (kernels::fold_groups, whose largest extents FOLD_X and FOLD_Y are
// specialization constants ATT_FOLD_X_ID and ATT_FOLD_Y_ID, kernels::with_fold): workgroup g
// handles logical groups group_index() + k * group_count(), k = 0, 1, ...
// Both are uniform across a workgroup, so loops over them may contain
// barriers. Neither reads gl_NumWorkGroups, which counts only the workgroups
// of one piece when CommandRecorder cuts a grid (vkCmdDispatchBase): the
// grid is FOLD_X wide whenever it has more than one row, and a stride of
// FOLD_X * FOLD_Y (< 2^31) passes every logical group without wrapping.
layout(constant_id = ATT_FOLD_X_ID) const uint FOLD_X = 65535u;
layout(constant_id = ATT_FOLD_Y_ID) const uint FOLD_Y = 32768u;
uint group_index() { return gl_WorkGroupID.y * FOLD_X + gl_WorkGroupID.x; }
uint group_count() { return FOLD_X * FOLD_Y; }

#endif
