// Row addressing (interface/rows.h) and the folded grid of the transformer
// block kernels.
#ifndef ATTENDRE_ROWS_GLSL
#define ATTENDRE_ROWS_GLSL

// Word of row r: offset + ((first + r) % capacity) * stride.
uint row_word(uint offset, uint stride, uint first, uint capacity, uint r) {
  return offset + ((first + r) % capacity) * stride;
}
// Word of row r of the push-constant row reference `p` (declared by ATT_ROWS(p)).
#define ROW_WORD(p, r) row_word(pc.p##_offset, pc.p##_stride, pc.p##_first, pc.p##_capacity, (r))

// Logical workgroups are folded into a 2-D grid within the dispatch limits
// (kernels::fold_groups): workgroup g handles logical groups
// group_index() + k * group_count(), k = 0, 1, ... Both are uniform across a
// workgroup, so loops over them may contain barriers.
uint group_index() { return gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x; }
uint group_count() { return gl_NumWorkGroups.x * gl_NumWorkGroups.y; }

#endif
