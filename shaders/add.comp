#version 450
// C = A + B row by row (residual adds that matmul's R input does not cover).
// Each invocation reads and writes only element (row, i), so with -DIN_PLACE
// the C rows are rows of binding 0 (A += B, or any C rows of A's buffer) and
// there is no binding 2.
//
// Bindings:  0 A rows read (IN_PLACE: read/write), 1 B rows read,
//            2 C rows write (cols floats each)
// Spec constants: 0 workgroup size W
// Push constants: AddParams (interface/add.h)
// Dispatch: rows * ceil(cols / W) logical groups, folded (kernels::fold_groups)
#extension GL_GOOGLE_include_directive : require
#include "interface/add.h"
#include "rows.glsl"

layout(local_size_x_id = 0) in;

#ifdef IN_PLACE
layout(std430, binding = 0) buffer ARows { float a_rows[]; };
#define c_rows a_rows
#else
layout(std430, binding = 0) readonly buffer ARows { float a_rows[]; };
layout(std430, binding = 2) writeonly buffer CRows { float c_rows[]; };
#endif
layout(std430, binding = 1) readonly buffer BRows { float b_rows[]; };

void main() {
  const uint W = gl_WorkGroupSize.x;
  const uint blocks = (pc.cols + W - 1) / W;
  for (uint group = group_index(); group < pc.rows * blocks; group += group_count()) {
    const uint row = group / blocks, i = (group % blocks) * W + gl_LocalInvocationID.x;
    if (i < pc.cols) c_rows[ROW_WORD(c, row) + i] = a_rows[ROW_WORD(a, row) + i] + b_rows[ROW_WORD(b, row) + i];
  }
}
