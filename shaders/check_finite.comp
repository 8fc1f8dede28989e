#version 450
// Flags non-finite values (NaN, +-inf) among `count` floats from word
// `first` of binding 0: an invocation that finds one sets word 0 of binding
// 1 (atomicOr: integer atomics only, which every device has). The host reads
// the flag after the submission and reports the step and the stage instead
// of handing out the values (gpu/finite_checks.hpp).
//
// Bindings:  0 values (floats)   read
//            1 flag (uint)       read/write (atomic)
// Spec constants: 0 workgroup size W
// Push constants: FiniteParams (interface/finite.h)
// Dispatch: ceil(count / W) logical groups, folded (kernels::fold_groups)
#extension GL_GOOGLE_include_directive : require
#include "interface/finite.h"
#include "rows.glsl"

layout(local_size_x_id = 0) in;

layout(std430, binding = 0) readonly buffer Values { float values[]; };
layout(std430, binding = 1) buffer Flag { uint flag[]; };

void main() {
  const uint W = gl_WorkGroupSize.x;
  bool bad = false;
  for (uint group = group_index(); group * W < pc.count; group += group_count()) {
    const uint i = group * W + gl_LocalInvocationID.x;
    if (i < pc.count) {
      const float x = values[pc.first + i];
      bad = bad || isnan(x) || isinf(x);
    }
  }
  if (bad) atomicOr(flag[0], 1u);
}
