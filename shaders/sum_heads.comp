#version 450
// Shared retrieval mode (spec 2.2): one row per query holding the sum of
// its heads' logits, in head order; masked entries stay -inf.
//
// Bindings: 0 logits (per-head rows read, summed rows write)
// Spec constants: 0 workgroup size W
// Dispatch: (ceil(held / W), queries)
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "interface/retrieve.h"

layout(local_size_x_id = 0) in;

layout(std430, binding = 0) buffer Logits { float logits[]; };

void main() {
  const uint slot = gl_GlobalInvocationID.x, query = gl_WorkGroupID.y;
  if (slot >= pc.held) return;
  float sum = 0.0;
  for (uint h = 0u; h < pc.heads_q; ++h) sum += logits[(query * pc.heads_q + h) * pc.logit_stride + slot];
  logits[pc.summed_offset + query * pc.logit_stride + slot] = sum;
}
