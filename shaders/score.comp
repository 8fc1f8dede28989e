#version 450
// Attention logits for one batch of evicted queries against every held K/V
// entry: logit = scale * dot(q_h, k_g(h)) + bias, or -inf where masked
// (causal, tag, invalid query). A tiled GEMM per key/value head: the rows of
// a tile are (query, head-in-group) pairs, so GQA/MQA read each key once.
//
// Bindings:  0 Q ring (q floats, positions, valid, tags)   read
//            1 K/V memory (keys, positions, tags)           read
//            2 logits [queries * heads_q][logit_stride]     write
// Spec constants: 0 workgroup size W, 1 TILE_R rows, 2 TILE_M slots, 3 TILE_D
//                 (TILE_R * TILE_M / W <= kMaxScoreOutputsPerThread, W % TILE_M == 0)
// Dispatch: (ceil(held / TILE_M), ceil(queries * group / TILE_R), heads_kv)
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "interface/score.h"

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint TILE_R = 16;
layout(constant_id = 2) const uint TILE_M = 64;
layout(constant_id = 3) const uint TILE_D = 16;
// Spec-constant expressions: loops over them unroll and keep acc in registers.
const uint ROW_STEP = gl_WorkGroupSize.x / TILE_M;
const uint OUTPUTS = TILE_R / ROW_STEP;

layout(std430, binding = 0) readonly buffer QRing { uint ring[]; };
layout(std430, binding = 1) readonly buffer KvMemory { uint kv[]; };
layout(std430, binding = 2) writeonly buffer Logits { float logits[]; };

shared float q_tile[TILE_R * (TILE_D + 1)];  // +1 pads away bank conflicts
shared float k_tile[TILE_M * (TILE_D + 1)];

void main() {
  const uint W = gl_WorkGroupSize.x;
  const uint tid = gl_LocalInvocationID.x;
  const uint group = pc.heads_q / pc.heads_kv;
  const uint g = gl_WorkGroupID.z;
  const uint row0 = gl_WorkGroupID.y * TILE_R;
  const uint slot0 = gl_WorkGroupID.x * TILE_M;
  const uint rows = pc.queries * group;

  // Thread t owns slot column t % TILE_M and rows t / TILE_M + a * ROW_STEP.
  const uint col = tid % TILE_M;
  float acc[OUTPUTS];
  for (uint a = 0; a < OUTPUTS; ++a) acc[a] = 0.0;

  for (uint d0 = 0; d0 < pc.head_dim; d0 += TILE_D) {
    for (uint i = tid; i < TILE_R * TILE_D; i += W) {
      const uint r = i / TILE_D, dd = i % TILE_D, row = row0 + r;
      float x = 0.0;
      if (row < rows && d0 + dd < pc.head_dim) {
        const uint query = row / group, h = g * group + row % group;
        const uint ring_row = (pc.ring_first + query) % pc.ring_capacity;
        // Scaled before the dot product, so that no partial sum can
        // overflow where the logit itself fits (see score_direct.comp).
        x = pc.scale * uintBitsToFloat(ring[(ring_row * pc.heads_q + h) * pc.head_dim + d0 + dd]);
      }
      q_tile[r * (TILE_D + 1) + dd] = x;
    }
    for (uint i = tid; i < TILE_M * TILE_D; i += W) {
      const uint m = i / TILE_D, dd = i % TILE_D, slot = slot0 + m;
      float x = 0.0;
      if (slot < pc.held && d0 + dd < pc.head_dim)
        x = uintBitsToFloat(kv[pc.kv_key_offset + (slot * pc.heads_kv + g) * pc.head_dim + d0 + dd]);
      k_tile[m * (TILE_D + 1) + dd] = x;
    }
    barrier();  // tiles complete before anyone reads them
    for (uint dd = 0; dd < TILE_D; ++dd) {
      const float k = k_tile[col * (TILE_D + 1) + dd];
      for (uint a = 0; a < OUTPUTS; ++a)
        acc[a] = fma(q_tile[(tid / TILE_M + a * ROW_STEP) * (TILE_D + 1) + dd], k, acc[a]);
    }
    barrier();  // everyone done reading before the next tiles overwrite them
  }

  const uint slot = slot0 + col;
  if (slot >= pc.held) return;
  const int p_key = int(kv[pc.kv_pos_offset + slot]);
  const uint key_tag = kv[pc.kv_tag_offset + slot];
  for (uint a = 0; a < OUTPUTS; ++a) {
    const uint row = row0 + tid / TILE_M + a * ROW_STEP;
    if (row >= rows) break;
    const uint query = row / group, h = g * group + row % group;
    const uint ring_row = (pc.ring_first + query) % pc.ring_capacity;
    const int p_query = int(ring[pc.ring_pos_offset + ring_row]);
    bool masked = ring[pc.ring_valid_offset + ring_row] == 0u;
    masked = masked || (pc.causal != 0u && p_key > p_query);
    masked = masked || (pc.tag_mask != 0u && key_tag != ring[pc.ring_tag_offset + ring_row]);
    float logit = acc[a];
    if (pc.alibi != 0u) logit += alibi_bias(h, pc.heads_q, p_query - p_key);
    logits[(query * pc.heads_q + h) * pc.logit_stride + slot] = masked ? NEG_INF : logit;
  }
}
