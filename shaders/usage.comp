#version 450
// Per-query usage of every held entry (spec 2.4): usage[q][j] = sum over
// heads, in head order, of a(q,h,j), and used[q][j] = 1 if j is in some
// R(q,h). One workgroup per query; within one head the retrieved slots are
// distinct, so heads are accumulated one after another without atomics.
// The rows start zeroed (RetrieveKernels::usage fills them first), so a
// workgroup's work is its query's lists (heads * list_count), not M.
//
// Bindings: 0 top-K lists read, 1 attention buffer (weights) read,
//           2 usage [query][usage_stride] floats, then used flags (coherent)
// Spec constants: 0 workgroup size W
// Dispatch: (queries), after the usage and used rows are filled with 0
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "interface/retrieve.h"

layout(local_size_x_id = 0) in;

layout(std430, binding = 0) readonly buffer Lists { uint lists[]; };
layout(std430, binding = 1) readonly buffer Attention { uint attention[]; };
layout(std430, binding = 2) coherent buffer Usage { uint usage[]; };

#include "retrieved.glsl"

void main() {
  const uint tid = gl_LocalInvocationID.x, W = gl_WorkGroupSize.x;
  const uint query = gl_WorkGroupID.x;
  const uint usage_row = query * pc.usage_stride, used_row = pc.used_offset + query * pc.usage_stride;
  for (uint head = 0u; head < pc.heads_q; ++head) {
    const uint row = query * pc.heads_q + head;
    for (uint r = tid; r < pc.list_count; r += W) {
      const float weight = uintBitsToFloat(attention[pc.weight_offset + row * pc.weight_stride + r]);
      if (weight < 0.0) continue;
      const uint slot = retrieved_slot(query, head, r);
      usage[usage_row + slot] = floatBitsToUint(uintBitsToFloat(usage[usage_row + slot]) + weight);
      usage[used_row + slot] = 1u;
    }
    memoryBarrierBuffer();
    barrier();  // this head's additions land before the next head reads them
  }
}
