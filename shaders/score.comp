#version 450
// Attention logits for one batch of evicted queries against every held K/V
// entry: logit = scale * dot(q_h, k_g(h)) + bias, or -inf where masked
// (causal, tag, invalid query). A tiled GEMM per key/value head: the rows of
// a tile are (query, head-in-group) pairs, so GQA/MQA read each key once.
//
// LM_INFINITE (interface/score.h): room for every query variant and both
// key variants (3 + 2 tiles instead of 1 + 1, 4 (3 TILE_R + 2 TILE_M)
// (TILE_D + 1) bytes), of which a workgroup loads the variants its pairs
// read; each output accumulates with the pair of tiles its distance picks,
// one multiply-add per output and dim as without, plus a select. Measured
// on lavapipe: 1.4x (every pair local) to 1.7x (mixed tiles) the plain
// kernel's time (docs/spec-notes.md, "Positions").
//
// Queries and keys are read as the memories store them (stored.glsl: fp32,
// or fp16 through 16-bit loads or unpacked words); the tiles and math are fp32.
//
// Bindings:  0 Q ring (q floats, positions, valid, tags)   read
//            1 K/V memory (keys, positions, tags, T5 tables) read
//            2 logits [queries * heads_q][logit_stride]     write
// Spec constants: 0 workgroup size W, 1 TILE_R rows, 2 TILE_M slots, 3 TILE_D,
//                 4 LM_INFINITE (0 or 1), 5 SCORE_FEATURES (interface/positions.h;
//                 default: all)
//                 (TILE_R * TILE_M / W <= kMaxScoreOutputsPerThread, W % TILE_M == 0)
// Dispatch: (ceil(held / TILE_M), ceil(queries * group / TILE_R), heads_kv)
#extension GL_GOOGLE_include_directive : require
#include "stored.glsl"
#include "common.glsl"
#include "interface/score.h"

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint TILE_R = 16;
layout(constant_id = 2) const uint TILE_M = 64;
layout(constant_id = 3) const uint TILE_D = 16;
layout(constant_id = 4) const uint LM_INFINITE = 0;
layout(constant_id = 5) const uint SCORE_FEATURES = kScoreAllFeatures;  // interface/positions.h
// Spec-constant expressions: loops over them unroll and keep acc in registers.
const uint ROW_STEP = gl_WorkGroupSize.x / TILE_M;
const uint OUTPUTS = TILE_R / ROW_STEP;
const uint Q_VARIANTS = LM_INFINITE != 0u ? kLmQueryVariants : 1u;
const uint K_VARIANTS = LM_INFINITE != 0u ? kLmKeyVariants : 1u;

layout(std430, binding = 0) readonly buffer QRing { uint ring[]; };
layout(std430, binding = 1) readonly buffer KvMemory { uint kv[]; };
STORED_VIEWS(0, ring)
STORED_VIEWS(1, kv)
layout(std430, binding = 2) writeonly buffer Logits { float logits[]; };

#include "score_positions.glsl"

// [variant][row][TILE_D + 1] and [variant][slot][TILE_D + 1]: the +1 pads
// away bank conflicts.
shared float q_tile[Q_VARIANTS * TILE_R * (TILE_D + 1)];
shared float k_tile[K_VARIANTS * TILE_M * (TILE_D + 1)];
shared uint tile_variants;  // LM_INFINITE: bit v set when an output reads query variant v

void main() {
  const uint W = gl_WorkGroupSize.x;
  const uint tid = gl_LocalInvocationID.x;
  const uint group = pc.heads_q / pc.heads_kv;
  const uint g = gl_WorkGroupID.z;
  const uint row0 = gl_WorkGroupID.y * TILE_R;
  const uint slot0 = gl_WorkGroupID.x * TILE_M;
  const uint rows = pc.queries * group;
  const uint q_row = pc.heads_q * pc.head_dim, kv_row = pc.heads_kv * pc.head_dim;

  // Thread t owns slot column t % TILE_M and rows t / TILE_M + a * ROW_STEP.
  const uint col = tid % TILE_M;
  const uint slot = slot0 + col;
  float acc[OUTPUTS];
  uint q_base[OUTPUTS];  // where output a's query row starts in q_tile
  bool global_key[OUTPUTS];  // output a reads the un-rotated key variant
  if (LM_INFINITE != 0u) {
    if (tid == 0u) tile_variants = 0u;
    barrier();  // cleared before anyone sets a bit
  }
  uint mine = 0u;  // the variants this thread's outputs read
  for (uint a = 0; a < OUTPUTS; ++a) {
    acc[a] = 0.0;
    const uint r = tid / TILE_M + a * ROW_STEP, row = row0 + r;
    uint variant = kLmLocal;
    if (LM_INFINITE != 0u && row < rows && slot < pc.held) {
      const uint ring_row = (pc.ring_first + row / group) % pc.ring_capacity;
      variant = lm_variant(int(ring[pc.ring_pos_offset + ring_row]), int(kv[pc.kv_pos_offset + slot]));
    }
    mine |= 1u << variant;
    q_base[a] = (variant * TILE_R + r) * (TILE_D + 1);
    global_key[a] = variant != kLmLocal;
  }
  // Tiles no output reads are not loaded: a tile whose pairs are all
  // within n_local loads what the plain kernel loads.
  uint used = 1u;
  if (LM_INFINITE != 0u) {
    atomicOr(tile_variants, mine);
    barrier();  // every bit set before the workgroup reads the mask
    used = tile_variants;
  }

  for (uint d0 = 0; d0 < pc.head_dim; d0 += TILE_D) {
    for (uint v = 0; v < Q_VARIANTS; ++v) {
      if ((used >> v & 1u) == 0u) continue;  // uniform: the mask is the workgroup's
      for (uint i = tid; i < TILE_R * TILE_D; i += W) {
        const uint r = i / TILE_D, dd = i % TILE_D, row = row0 + r;
        float x = 0.0;
        if (row < rows && d0 + dd < pc.head_dim) {
          const uint query = row / group, h = g * group + row % group;
          const uint ring_row = (pc.ring_first + query) % pc.ring_capacity;
          // Scaled before the dot product, so that no partial sum can
          // overflow where the logit itself fits (see score_direct.comp).
          x = pc.scale * STORED_LOAD(ring, 0u, ring_row * pc.ring_q_stride + v * q_row + h * pc.head_dim + d0 + dd);
        }
        q_tile[(v * TILE_R + r) * (TILE_D + 1) + dd] = x;
      }
    }
    for (uint v = 0; v < K_VARIANTS; ++v) {
      // Rotated keys serve the local variant, un-rotated ones the other two.
      if ((used & (v == 0u ? 1u : ~1u)) == 0u) continue;
      for (uint i = tid; i < TILE_M * TILE_D; i += W) {
        const uint m = i / TILE_D, dd = i % TILE_D, s = slot0 + m;
        float x = 0.0;
        if (s < pc.held && d0 + dd < pc.head_dim)
          x = STORED_LOAD(kv, pc.kv_key_offset, s * pc.kv_key_stride + v * kv_row + g * pc.head_dim + d0 + dd);
        k_tile[(v * TILE_M + m) * (TILE_D + 1) + dd] = x;
      }
    }
    barrier();  // tiles complete before anyone reads them
    for (uint dd = 0; dd < TILE_D; ++dd) {
      const float k = k_tile[col * (TILE_D + 1) + dd];
      const float k_global = LM_INFINITE != 0u ? k_tile[(TILE_M + col) * (TILE_D + 1) + dd] : 0.0;
      for (uint a = 0; a < OUTPUTS; ++a)
        acc[a] = fma(q_tile[q_base[a] + dd], global_key[a] ? k_global : k, acc[a]);
    }
    barrier();  // everyone done reading before the next tiles overwrite them
  }

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
    masked = masked || (pc.causal != 0u && p_key > p_query) || outside_window(p_query, p_key);
    masked = masked || (tag_masking() && key_tag != ring[pc.ring_tag_offset + ring_row]);
    const float logit = pair_logit(acc[a], h, p_query, p_key);
    logits[(query * pc.heads_q + h) * pc.logit_stride + slot] = masked ? NEG_INF : logit;
  }
}
