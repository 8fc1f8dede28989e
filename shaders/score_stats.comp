#version 450
// The initial score of new entries for lra_* and lfa (spec 2.1, 2.4):
// mu - k * sigma over the held, unpinned entries before this insertion
// (population sigma; none held gives 0), or a constant. Two passes (mean,
// then squared deviations) keep fp32 cancellation small.
//
// Bindings: 0 K/V memory read, 1 chunk (init word) write
// Spec constants: 0 workgroup size W (power of two)
// Dispatch: (1)
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "interface/insert.h"

layout(local_size_x_id = 0) in;

layout(std430, binding = 0) readonly buffer KvMemory { uint kv[]; };
layout(std430, binding = 1) buffer Chunk { uint chunk[]; };

shared float s_sum[gl_WorkGroupSize.x];
shared uint s_count[gl_WorkGroupSize.x];

// Tree reduction of s_sum and s_count; every invocation must call it.
void reduce() {
  barrier();  // partial sums are in place
  for (uint stride = gl_WorkGroupSize.x / 2u; stride > 0u; stride >>= 1) {
    if (gl_LocalInvocationID.x < stride) {
      s_sum[gl_LocalInvocationID.x] += s_sum[gl_LocalInvocationID.x + stride];
      s_count[gl_LocalInvocationID.x] += s_count[gl_LocalInvocationID.x + stride];
    }
    barrier();  // one level completes before the next reads it
  }
}

bool counted(uint slot) { return int(kv[pc.kv_pos_offset + slot]) >= int(pc.n_sink); }
float score(uint slot) { return uintBitsToFloat(kv[pc.kv_score_offset + slot]); }

void main() {
  const uint tid = gl_LocalInvocationID.x, W = gl_WorkGroupSize.x;
  float sum = 0.0;
  uint count = 0u;
  for (uint s = tid; s < pc.held; s += W)
    if (counted(s)) sum += score(s), ++count;
  s_sum[tid] = sum;
  s_count[tid] = count;
  reduce();
  const uint n = s_count[0];
  const float mean = n == 0u ? 0.0 : s_sum[0] / float(n);
  barrier();  // everyone read the totals before they are reused

  float squares = 0.0;
  for (uint s = tid; s < pc.held; s += W)
    if (counted(s)) squares += (score(s) - mean) * (score(s) - mean);
  s_sum[tid] = squares;
  s_count[tid] = 0u;
  reduce();
  if (tid == 0u) {
    const float sigma = n == 0u ? 0.0 : sqrt(s_sum[0] / float(n));
    const float init = pc.init_constant != 0u ? pc.init_value : mean - pc.init_k * sigma;
    chunk[pc.chunk_init_offset] = floatBitsToUint(init);
  }
}
