#version 450
// The initial score of new entries for lra_* and lfa (spec 2.1, 2.4):
// mu - k * sigma over the held, unpinned entries before this insertion
// (population sigma; none held gives 0), or a constant. The result is
// clamped to the fp32 range, as the reference does (core/numerics.hpp).
//
// Bounded dispatches: workgroup g reduces only the slots
// [g * STATS_SPAN, (g + 1) * STATS_SPAN), so no dispatch grows with M.
// Within its span it runs three passes: the largest |score| S_g, then the
// sum and the squared deviations of score / S_g, so that neither sum can
// overflow fp32 whatever the scores (a clamped initial score may be
// -3.4e38); two passes over deviations keep fp32 cancellation small. One
// workgroup writes the initial score directly; several write their
// partials (S_g, n_g, sum_g, m2_g) and the STATS_COMBINE build (one
// workgroup) merges them, rescaled to S = max S_g, by Chan's pairwise
// variance: mean = sum_g (S_g / S) sum_g / n and
// M2 = sum_g [(S_g / S)^2 m2_g + n_g (mean_g - mean)^2], every term bounded.
// SUBGROUP_ARITHMETIC builds reduce with subgroup operations (reduce.glsl).
//
// Bindings: 0 K/V memory read, 1 chunk (init word) write, 2 partials (4
//           words per workgroup, in the select lists' scratch) write;
//           STATS_COMBINE: 0 partials read, 1 chunk (init word) write
// Spec constants: 0 workgroup size W (power of two), 1.. InsertConstants,
//                 28 STATS_SPAN (slots per workgroup, a multiple of W)
// Dispatch: (ceil(held / STATS_SPAN)); STATS_COMBINE (1), only when that is > 1
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "interface/insert.h"

layout(local_size_x_id = 0) in;
layout(constant_id = 28) const uint STATS_SPAN = 1024;

#ifndef STATS_COMBINE
layout(std430, binding = 0) readonly buffer KvMemory { uint kv[]; };
layout(std430, binding = 1) buffer Chunk { uint chunk[]; };
layout(std430, binding = 2) writeonly buffer Partials { uint partials[]; };
#else
layout(std430, binding = 0) readonly buffer Partials { uint partials[]; };
layout(std430, binding = 1) buffer Chunk { uint chunk[]; };
#endif

#include "reduce.glsl"

// mu - k sigma of scores scaled by S > 0 (mean and sigma of score / S).
void write_init(float S, float mean, float sigma) {
  if (gl_LocalInvocationID.x != 0u) return;
  // S > 0, so S * (+-inf) is +-inf (never NaN), which the clamp bounds.
  const float init = S == 0.0 ? 0.0 : clamp(S * (mean - sc_init_k * sigma), -kFloatMax, kFloatMax);
  chunk[sc_chunk_init_offset] = floatBitsToUint(init);
}

#ifndef STATS_COMBINE
// Pinned entries (spec 2.1; none when n_sink is 0) are left out.
bool counted(uint slot) { return sc_n_sink == 0u || int(kv[sc_kv_pos_offset + slot]) >= int(sc_n_sink); }
float score(uint slot) { return uintBitsToFloat(kv[sc_kv_score_offset + slot]); }

void main() {
  const uint tid = gl_LocalInvocationID.x, W = gl_WorkGroupSize.x;
  if (sc_init_constant != 0u) {
    if (tid == 0u && gl_WorkGroupID.x == 0u) chunk[sc_chunk_init_offset] = floatBitsToUint(sc_init_value);
    return;
  }
  const uint first = gl_WorkGroupID.x * STATS_SPAN, end = min(first + STATS_SPAN, pc.held);
  float largest = 0.0;
  uint count = 0u;
  for (uint s = first + tid; s < end; s += W)
    if (counted(s)) largest = max(largest, abs(score(s))), ++count;
  const float S = workgroup_max(largest);
  const uint n = workgroup_count(count);
  float sum = 0.0, m2 = 0.0;
  if (n > 0u && S > 0.0) {  // else nothing held, or every score 0: mu = sigma = 0
    for (uint s = first + tid; s < end; s += W)
      if (counted(s)) sum += score(s) / S;
    sum = workgroup_sum(sum);
    const float mean = sum / float(n);  // of score / S, within [-1, 1]
    for (uint s = first + tid; s < end; s += W)
      if (counted(s)) m2 += (score(s) / S - mean) * (score(s) / S - mean);
    m2 = workgroup_sum(m2);  // within [0, 4 n]
  }
  // One workgroup in all (not gl_NumWorkGroups, which counts one piece of a cut grid).
  if (pc.held <= STATS_SPAN) {
    write_init(n > 0u ? S : 0.0, n > 0u ? sum / float(n) : 0.0, n > 0u ? sqrt(m2 / float(n)) : 0.0);
  } else if (tid == 0u) {
    const uint at = 4u * gl_WorkGroupID.x;
    partials[at] = floatBitsToUint(S);
    partials[at + 1u] = n;
    partials[at + 2u] = floatBitsToUint(sum);
    partials[at + 3u] = floatBitsToUint(m2);
  }
}
#else
float partial_scale(uint g) { return uintBitsToFloat(partials[4u * g]); }
uint partial_count(uint g) { return partials[4u * g + 1u]; }
float partial_sum(uint g) { return uintBitsToFloat(partials[4u * g + 2u]); }
float partial_m2(uint g) { return uintBitsToFloat(partials[4u * g + 3u]); }

void main() {
  const uint tid = gl_LocalInvocationID.x, W = gl_WorkGroupSize.x;
  const uint groups = (pc.held + STATS_SPAN - 1u) / STATS_SPAN;
  float largest = 0.0;
  uint count = 0u;
  for (uint g = tid; g < groups; g += W) largest = max(largest, partial_scale(g)), count += partial_count(g);
  const float S = workgroup_max(largest);
  const uint n = workgroup_count(count);
  if (n == 0u || S == 0.0) {
    write_init(0.0, 0.0, 0.0);
    return;
  }
  // A group's sum and deviations rescaled from its S_g to S (S_g <= S).
  float sum = 0.0;
  for (uint g = tid; g < groups; g += W) sum += partial_sum(g) * (partial_scale(g) / S);
  const float mean = workgroup_sum(sum) / float(n);
  float m2 = 0.0;
  for (uint g = tid; g < groups; g += W) {
    const uint n_g = partial_count(g);
    if (n_g == 0u) continue;
    const float scale = partial_scale(g) / S;
    const float mean_g = partial_sum(g) * scale / float(n_g);
    m2 += partial_m2(g) * scale * scale + float(n_g) * (mean_g - mean) * (mean_g - mean);
  }
  write_init(S, mean, sqrt(workgroup_sum(m2) / float(n)));
}
#endif
