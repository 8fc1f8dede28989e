#version 450
// The initial score of new entries for lra_* and lfa (spec 2.1, 2.4):
// mu - k * sigma over the held, unpinned entries before this insertion
// (population sigma; none held gives 0), or a constant. Three passes: the
// largest |score| S, then the mean and the squared deviations of score / S,
// so that neither sum can overflow fp32 whatever the scores (a clamped
// initial score may be -3.4e38); two passes over deviations keep fp32
// cancellation small. The result is clamped to the fp32 range, as the
// reference does (core/numerics.hpp).
//
// Bindings: 0 K/V memory read, 1 chunk (init word) write
// Spec constants: 0 workgroup size W (power of two), 1.. InsertConstants
// Dispatch: (1)
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "interface/insert.h"

layout(local_size_x_id = 0) in;

layout(std430, binding = 0) readonly buffer KvMemory { uint kv[]; };
layout(std430, binding = 1) buffer Chunk { uint chunk[]; };

shared float s_sum[gl_WorkGroupSize.x];
shared uint s_count[gl_WorkGroupSize.x];

// Tree reduction of s_sum (a sum, or a max when take_max) and s_count;
// every invocation must call it.
void reduce(bool take_max) {
  barrier();  // partial values are in place
  for (uint stride = gl_WorkGroupSize.x / 2u; stride > 0u; stride >>= 1) {
    const uint tid = gl_LocalInvocationID.x;
    if (tid < stride) {
      s_sum[tid] = take_max ? max(s_sum[tid], s_sum[tid + stride]) : s_sum[tid] + s_sum[tid + stride];
      s_count[tid] += s_count[tid + stride];
    }
    barrier();  // one level completes before the next reads it
  }
}

// Pinned entries (spec 2.1; none when n_sink is 0) are left out.
bool counted(uint slot) { return sc_n_sink == 0u || int(kv[sc_kv_pos_offset + slot]) >= int(sc_n_sink); }
float score(uint slot) { return uintBitsToFloat(kv[sc_kv_score_offset + slot]); }

// Every invocation gets the reduced value; s_sum is free again afterwards.
float reduced(float value, uint count, bool take_max) {
  s_sum[gl_LocalInvocationID.x] = value;
  s_count[gl_LocalInvocationID.x] = count;
  reduce(take_max);
  const float result = s_sum[0];
  barrier();  // everyone read the result before s_sum is reused
  return result;
}

void main() {
  const uint tid = gl_LocalInvocationID.x, W = gl_WorkGroupSize.x;
  if (sc_init_constant != 0u) {
    if (tid == 0u) chunk[sc_chunk_init_offset] = floatBitsToUint(sc_init_value);
    return;
  }
  float largest = 0.0;
  uint count = 0u;
  for (uint s = tid; s < pc.held; s += W)
    if (counted(s)) largest = max(largest, abs(score(s))), ++count;
  s_count[tid] = count;
  const float S = reduced(largest, count, true);
  const uint n = s_count[0];
  barrier();  // everyone read the count
  if (n == 0u || S == 0.0) {  // nothing held, or every score 0: mu = sigma = 0
    if (tid == 0u) chunk[sc_chunk_init_offset] = floatBitsToUint(0.0);
    return;
  }
  float sum = 0.0;
  for (uint s = tid; s < pc.held; s += W)
    if (counted(s)) sum += score(s) / S;
  const float mean = reduced(sum, 0u, false) / float(n);  // of score / S, within [-1, 1]
  float squares = 0.0;
  for (uint s = tid; s < pc.held; s += W)
    if (counted(s)) squares += (score(s) / S - mean) * (score(s) / S - mean);
  const float sigma = sqrt(reduced(squares, 0u, false) / float(n));  // of score / S, within [0, 2]
  if (tid == 0u) {
    // S > 0, so S * (+-inf) is +-inf (never NaN), which the clamp bounds.
    const float init = clamp(S * (mean - sc_init_k * sigma), -kFloatMax, kFloatMax);
    chunk[sc_chunk_init_offset] = floatBitsToUint(init);
  }
}
