#version 450
// Flags non-finite values (NaN, +-inf) among `count` floats from word
// `first` of binding 0: an invocation that finds one sets word 0 of binding
// 1 (atomicOr: integer atomics only, which every device has). The host reads
// the flag after the submission and reports the step and the stage instead
// of handing out the values (gpu/finite_checks.hpp).
// -DPAIR: also `count_b` floats from word `first_b` of binding 2, flagged
// in binding 3: two sites in one dispatch (a stack block's attention
// outputs and output rows), since a CPU driver's fixed cost per dispatch
// far exceeds the check itself.
//
// Bindings:  0 values (floats)   read
//            1 flag (uint)       read/write (atomic)
//            2 values B (PAIR)   read
//            3 flag B (PAIR)     read/write (atomic)
// Spec constants: 0 workgroup size W
// Push constants: FiniteParams (interface/finite.h)
// Dispatch: ceil(max(count, count_b) / W) logical groups, folded (kernels::fold_groups)
#extension GL_GOOGLE_include_directive : require
#include "interface/finite.h"
#include "rows.glsl"

layout(local_size_x_id = 0) in;

layout(std430, binding = 0) readonly buffer Values { float values[]; };
layout(std430, binding = 1) buffer Flag { uint flag[]; };
#ifdef PAIR
layout(std430, binding = 2) readonly buffer ValuesB { float values_b[]; };
layout(std430, binding = 3) buffer FlagB { uint flag_b[]; };
#endif

bool non_finite(float x) { return isnan(x) || isinf(x); }

void main() {
  const uint W = gl_WorkGroupSize.x;
#ifdef PAIR
  const uint count = max(pc.count, pc.count_b);
#else
  const uint count = pc.count;
#endif
  bool bad = false, bad_b = false;
  for (uint group = group_index(); group * W < count; group += group_count()) {
    const uint i = group * W + gl_LocalInvocationID.x;
    if (i < pc.count) bad = bad || non_finite(values[pc.first + i]);
#ifdef PAIR
    if (i < pc.count_b) bad_b = bad_b || non_finite(values_b[pc.first_b + i]);
#endif
  }
  if (bad) atomicOr(flag[0], 1u);
#ifdef PAIR
  if (bad_b) atomicOr(flag_b[0], 1u);
#endif
}
