#version 450
// Direct scoring, for devices where barriers and shared-memory gathers are
// dear (CPU devices such as lavapipe): each invocation owns one K/V slot
// and computes its logits for ROWS (query, head-in-group) rows, reading
// keys and queries straight from their buffers with vec4 loads (scalar when
// head_dim is not a multiple of 4). Same output as score.comp.
//
// LM_INFINITE: each pair picks its query and key variant by distance
// (interface/score.h) and computes that one dot product: no extra
// arithmetic (measured within 1-3% of the plain kernel on lavapipe), only the
// second key row per slot and the two extra query rows per ring row in
// memory (docs/spec-notes.md, "Positions").
//
// Queries and keys as the memories store them (stored.glsl); math in fp32.
//
// Bindings:  as score.comp (0 Q ring, 1 K/V memory, 2 logits)
// Spec constants: 0 workgroup size W, 1 ROWS rows per invocation,
//                 2 LM_INFINITE (0 or 1)
// Dispatch: (ceil(held / W), ceil(queries * group / ROWS), heads_kv)
#extension GL_GOOGLE_include_directive : require
#include "stored.glsl"
#include "common.glsl"
#include "interface/score.h"

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint ROWS = 16;
layout(constant_id = 2) const uint LM_INFINITE = 0;

layout(std430, binding = 0) readonly buffer QRing { uint ring[]; };
layout(std430, binding = 1) readonly buffer KvMemory { uint kv[]; };
STORED_VIEWS(0, ring)  // vec4 (or fp16) aliases of QRing
STORED_VIEWS(1, kv)
layout(std430, binding = 2) writeonly buffer Logits { float logits[]; };

#include "score_positions.glsl"

// scale * dot(q, k), with the scale applied to q first: then every partial
// sum is bounded by scale * |q| * |k|, which the host keeps within 2^126
// (StreamValidator), where scaling the dot afterwards could overflow first.
// q_at and k_at count elements into the queries and the keys.
float scaled_dot(uint q_at, uint k_at) {
  float total = 0.0;
  if ((pc.head_dim & 3u) == 0u) {  // every row then starts on a vec4
    vec4 acc = vec4(0.0);
    for (uint d = 0u; d < pc.head_dim; d += 4u)
      acc = fma(pc.scale * STORED_LOAD4(ring, 0u, q_at + d), STORED_LOAD4(kv, pc.kv_key_offset, k_at + d), acc);
    total = (acc.x + acc.y) + (acc.z + acc.w);
  } else {
    for (uint d = 0u; d < pc.head_dim; ++d)
      total = fma(pc.scale * STORED_LOAD(ring, 0u, q_at + d), STORED_LOAD(kv, pc.kv_key_offset, k_at + d), total);
  }
  return total;
}

void main() {
  const uint slot = gl_GlobalInvocationID.x;
  if (slot >= pc.held) return;
  const uint group = pc.heads_q / pc.heads_kv, g = gl_WorkGroupID.z;
  const uint rows = pc.queries * group, row0 = gl_WorkGroupID.y * ROWS;
  const uint k_at = slot * pc.kv_key_stride + g * pc.head_dim;
  const int p_key = int(kv[pc.kv_pos_offset + slot]);
  const uint key_tag = kv[pc.kv_tag_offset + slot];
  for (uint row = row0; row < min(rows, row0 + ROWS); ++row) {
    const uint query = row / group, h = g * group + row % group;
    const uint ring_row = (pc.ring_first + query) % pc.ring_capacity;
    const int p_query = int(ring[pc.ring_pos_offset + ring_row]);
    bool masked = ring[pc.ring_valid_offset + ring_row] == 0u;
    masked = masked || (pc.causal != 0u && p_key > p_query) || outside_window(p_query, p_key);
    masked = masked || (pc.tag_mask != 0u && key_tag != ring[pc.ring_tag_offset + ring_row]);
    const uint variant = LM_INFINITE != 0u ? lm_variant(p_query, p_key) : kLmLocal;
    const uint q_at = ring_row * pc.ring_q_stride + variant * pc.heads_q * pc.head_dim + h * pc.head_dim;
    const uint key_variant = variant == kLmLocal ? 0u : 1u;
    float logit = capped_logit(scaled_dot(q_at, k_at + key_variant * pc.heads_kv * pc.head_dim));
    logit += position_bias(h, p_query, p_key);
    logits[(query * pc.heads_q + h) * pc.logit_stride + slot] = masked ? NEG_INF : logit;
  }
}
