#version 450
// Attend (spec 2.3) for one (query, head) row per workgroup: softmax over
// the retrieved logits (max, then sum of exponentials), then the weighted
// gather of values. Writes the output row and each entry's weight (-1 for
// list entries outside R: masked or padding), which usage.comp reads.
//
// Values are read as the memory stores them (stored.glsl: fp32, or fp16
// through 16-bit loads or unpacked words); the math is fp32.
//
// Bindings: 0 logits read, 1 top-K lists read, 2 K/V memory read,
//           3 attention buffer (outputs, weights) write
// Spec constants: 0 workgroup size W (power of two); head_dim <= W * kMaxDimsPerThread
// Dispatch: (heads_q, queries)
#extension GL_GOOGLE_include_directive : require
#include "stored.glsl"
#include "common.glsl"
#include "interface/retrieve.h"

layout(local_size_x_id = 0) in;

layout(std430, binding = 0) readonly buffer Logits { float logits[]; };
layout(std430, binding = 1) readonly buffer Lists { uint lists[]; };
layout(std430, binding = 2) readonly buffer KvMemory { uint kv[]; };
STORED_VIEWS(2, kv)
layout(std430, binding = 3) writeonly buffer Attention { uint attention[]; };

#include "retrieved.glsl"

shared float s_reduce[gl_WorkGroupSize.x];
shared float s_weight[gl_WorkGroupSize.x];
shared uint s_slot[gl_WorkGroupSize.x];

float logit_of(uint row, uint slot) {
  return slot == kInvalid ? NEG_INF : logits[row * pc.logit_stride + slot];
}

// Tree reduction over s_reduce: max when take_max, else sum.
float reduce(float value, bool take_max) {
  const uint tid = gl_LocalInvocationID.x;
  s_reduce[tid] = value;
  barrier();  // every value is in place
  for (uint stride = gl_WorkGroupSize.x / 2u; stride > 0u; stride >>= 1) {
    if (tid < stride)
      s_reduce[tid] = take_max ? max(s_reduce[tid], s_reduce[tid + stride]) : s_reduce[tid] + s_reduce[tid + stride];
    barrier();  // one level completes before the next
  }
  const float result = s_reduce[0];
  barrier();  // everyone read the result before s_reduce is reused
  return result;
}

void main() {
  const uint tid = gl_LocalInvocationID.x, W = gl_WorkGroupSize.x;
  const uint head = gl_WorkGroupID.x, query = gl_WorkGroupID.y;
  const uint row = query * pc.heads_q + head;
  const uint g = head / (pc.heads_q / pc.heads_kv);

  float top = NEG_INF;
  for (uint r = tid; r < pc.list_count; r += W) top = max(top, logit_of(row, retrieved_slot(query, head, r)));
  top = reduce(top, true);
  float total = 0.0;
  if (top != NEG_INF)
    for (uint r = tid; r < pc.list_count; r += W) {
      const float l = logit_of(row, retrieved_slot(query, head, r));
      if (l != NEG_INF) total += exp(l - top);
    }
  total = reduce(total, false);

  float acc[kMaxDimsPerThread];
  for (uint k = 0u; k < kMaxDimsPerThread; ++k) acc[k] = 0.0;
  for (uint base = 0u; base < pc.list_count; base += W) {
    const uint r = base + tid;
    float weight = -1.0;
    uint slot = kInvalid;
    if (r < pc.list_count) {
      slot = retrieved_slot(query, head, r);
      const float l = logit_of(row, slot);
      if (l != NEG_INF) weight = exp(l - top) / total;
      attention[pc.weight_offset + row * pc.weight_stride + r] = floatBitsToUint(weight);
    }
    s_weight[tid] = weight;
    s_slot[tid] = slot;
    barrier();  // this chunk's weights are visible to every dimension owner
    const uint chunk = min(W, pc.list_count - base);
    for (uint e = 0u; e < chunk; ++e) {
      if (s_weight[e] < 0.0) continue;
      const uint v_base = s_slot[e] * pc.kv_value_stride + g * pc.head_dim;  // elements into the values
      for (uint k = 0u, d = tid; k < kMaxDimsPerThread && d < pc.head_dim; ++k, d += W)
        acc[k] = fma(s_weight[e], STORED_LOAD(kv, pc.kv_value_offset, v_base + d), acc[k]);
    }
    barrier();  // the chunk is consumed before the next overwrites it
  }
  const uint out_row = pc.out_offset + ((pc.out_first_query + query) * pc.heads_q + head) * pc.head_dim;
  for (uint k = 0u, d = tid; k < kMaxDimsPerThread && d < pc.head_dim; ++k, d += W)
    attention[out_row + d] = floatBitsToUint(acc[k]);
}
