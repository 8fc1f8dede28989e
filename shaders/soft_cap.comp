#version 450
// Final logit soft-capping in place (StackConfig::logit_soft_cap): every
// value of `rows` rows of `cols` floats becomes cap * tanh(x / cap)
// (soft_cap.glsl). Each invocation reads and writes only its element.
//
// Bindings:  0 X rows (read/write)
// Spec constants: 0 workgroup size W
// Push constants: SoftCapParams (interface/soft_cap.h)
// Dispatch: rows * ceil(cols / W) logical groups, folded (kernels::fold_groups)
#extension GL_GOOGLE_include_directive : require
#include "interface/soft_cap.h"
#include "rows.glsl"
#include "soft_cap.glsl"

layout(local_size_x_id = 0) in;

layout(std430, binding = 0) buffer XRows { float x_rows[]; };

void main() {
  const uint W = gl_WorkGroupSize.x;
  const uint blocks = (pc.cols + W - 1) / W;
  for (uint group = group_index(); group < pc.rows * blocks; group += group_count()) {
    const uint row = group / blocks, i = (group % blocks) * W + gl_LocalInvocationID.x;
    if (i < pc.cols) {
      const uint at = ROW_WORD(x, row) + i;
      x_rows[at] = soft_cap(x_rows[at], pc.cap);
    }
  }
}
