#version 450
// Direct scoring, for devices where barriers and shared-memory gathers are
// dear (CPU devices such as lavapipe): no shared memory, no barriers, keys
// and queries read straight from their buffers. Same output as score.comp.
//
// On a CPU device every buffer load in a loop costs a scalar load per lane,
// far more than an FMA, so loads per FMA set the speed (README "Matrix
// products on CPU devices"). Each invocation therefore owns a register
// tile: ROWS (query, head-in-group) rows x SLOTS slots (s0, s0 + W, ...),
// so that a key quad is read once for ROWS rows and a query quad once for
// SLOTS slots; the rows of a tile are the query heads of one KV group, so
// GQA reads each key row once per ROWS of them. Every invocation of a
// workgroup needs the same query quads: with -DSUBGROUP_SHUFFLE, SHARE
// lanes of a subgroup each load one quad in SHARE and pass them around by
// subgroupShuffle (slots past `held` and rows past the batch repeat the last
// one's reads, keeping every invocation in the shuffles, and are not
// written). Rows are read four values at a time when head_dim is a multiple
// of 4 (scalar otherwise), each pair summed in a vec4 in the previous direct
// kernel's order, so its logits keep their bits (the reader's block-0
// agreement with the float64 reference depends on how near-ties round;
// one float per pair measured up to 1.3x faster at 8 x 8 but rounds them
// differently).
//
// LM_INFINITE: each pair picks its query and key variant by distance
// (interface/score.h) and computes that one dot product, so pairs of a tile
// do not share their reads: that variant keeps one slot per invocation and
// loops over its ROWS rows (measured within 1-3% of the plain loop on
// lavapipe), only the second key row per slot and the two extra query rows
// per ring row in memory (docs/spec-notes.md, "Positions").
//
// Queries and keys as the memories store them (stored.glsl); math in fp32.
//
// Bindings:  as score.comp (0 Q ring, 1 K/V memory, 2 logits); KV_TEXEL
//            builds also 3: binding 1's range as R32G32B32A32_SFLOAT texels,
//            and with RING_TEXEL 4: binding 0's likewise (the query quads;
//            positions, valid flags and tags stay storage-buffer reads)
// Spec constants: 0 workgroup size W, 1 ROWS rows per invocation,
//                 2 LM_INFINITE (0 or 1), 3 SHARE (1 without
//                 -DSUBGROUP_SHUFFLE; else a power of two <= the subgroup
//                 size, W a multiple of the subgroup size), 4 SLOTS slots
//                 per invocation (1 under LM_INFINITE), 5 SCORE_FEATURES
//                 (interface/positions.h: what the pipeline's logits may need)
// Dispatch: (ceil(held / (W * SLOTS)), ceil(queries * group / ROWS), heads_kv)
//           (W: KernelPlan::direct_score_workgroup)
#extension GL_GOOGLE_include_directive : require
#include "stored.glsl"
#ifdef SUBGROUP_SHUFFLE
#extension GL_KHR_shader_subgroup_shuffle : require
#endif
#extension GL_EXT_control_flow_attributes : enable  // [[unroll]]: acc stays in registers
#include "common.glsl"
#include "interface/score.h"

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint ROWS = 16;
layout(constant_id = 2) const uint LM_INFINITE = 0;
layout(constant_id = 3) const uint SHARE = 1;
layout(constant_id = 4) const uint SLOTS = 1;
layout(constant_id = 5) const uint SCORE_FEATURES = kScoreAllFeatures;  // interface/positions.h

layout(std430, binding = 0) readonly buffer QRing { uint ring[]; };
layout(std430, binding = 1) readonly buffer KvMemory { uint kv[]; };
STORED_VIEWS(0, ring)  // vec4 (or fp16) aliases of QRing
STORED_VIEWS(1, kv)
KV_TEXELS(3)    // KV_TEXEL: the keys as texels (stored.glsl)
RING_TEXELS(4)  // RING_TEXEL: the query quads as texels
layout(std430, binding = 2) writeonly buffer Logits { float logits[]; };

#include "score_positions.glsl"

// Quad q (< SHARE) of the query quads the SHARE lanes loaded one each
// (`own`, lane share_lane's): the lane's own quad without sharing.
vec4 shared_quad(vec4 own, uint q) {
#ifdef SUBGROUP_SHUFFLE
  return SHARE > 1u ? subgroupShuffle(own, q) : own;
#else
  return own;
#endif
}

// What a tile row needs besides its query values.
struct Row {
  uint query, h, ring_row;
  int p_query;
  bool valid;
  uint tag;
};

Row row_at(uint row, uint g, uint group) {
  Row r;
  r.query = row / group;
  r.h = g * group + row % group;
  r.ring_row = (pc.ring_first + r.query) % pc.ring_capacity;
  r.p_query = int(ring[pc.ring_pos_offset + r.ring_row]);
  r.valid = ring[pc.ring_valid_offset + r.ring_row] != 0u;
  r.tag = ring[pc.ring_tag_offset + r.ring_row];
  return r;
}

// The logit of row r at a slot of position p_key and tag key_tag, from its
// scaled dot product (the query scaled first: then every partial sum is
// bounded by scale * |q| * |k|, which the host keeps within 2^126
// (StreamValidator), where scaling the dot afterwards could overflow first).
float finish(Row r, int p_key, uint key_tag, float dot) {
  bool masked = !r.valid || (pc.causal != 0u && p_key > r.p_query) || outside_window(r.p_query, p_key);
  masked = masked || (tag_masking() && key_tag != r.tag);
  return masked ? NEG_INF : pair_logit(dot, r.h, r.p_query, p_key);
}

float sum4(vec4 acc) { return (acc.x + acc.y) + (acc.z + acc.w); }

// LM-Infinite: one slot, one variant pair per (row, slot).
void main_lm_infinite(uint group, uint g, uint rows, uint row0) {
  const uint slot = gl_GlobalInvocationID.x;
  if (slot >= pc.held) return;
  const int p_key = int(kv[pc.kv_pos_offset + slot]);
  const uint key_tag = kv[pc.kv_tag_offset + slot];
  for (uint row = row0; row < min(rows, row0 + ROWS); ++row) {
    const Row r = row_at(row, g, group);
    const uint variant = lm_variant(r.p_query, p_key);
    const uint q_at = r.ring_row * pc.ring_q_stride + variant * pc.heads_q * pc.head_dim + r.h * pc.head_dim;
    const uint k_at = slot * pc.kv_key_stride + ((variant == kLmLocal ? 0u : 1u) * pc.heads_kv + g) * pc.head_dim;
    float dot = 0.0;
    if ((pc.head_dim & 3u) == 0u) {
      vec4 acc = vec4(0.0);
      for (uint d = 0u; d < pc.head_dim; d += 4u)
        acc = fma(pc.scale * STORED_LOAD4(ring, 0u, q_at + d), KV_LOAD4(pc.kv_key_offset, k_at + d), acc);
      dot = sum4(acc);
    } else {
      for (uint d = 0u; d < pc.head_dim; ++d)
        dot = fma(pc.scale * STORED_LOAD(ring, 0u, q_at + d), STORED_LOAD(kv, pc.kv_key_offset, k_at + d), dot);
    }
    logits[(r.query * pc.heads_q + r.h) * pc.logit_stride + slot] = finish(r, p_key, key_tag, dot);
  }
}

#define ACC(r, j) acc[(r) * SLOTS + (j)]

void main() {
  const uint W = gl_WorkGroupSize.x;
  const uint group = pc.heads_q / pc.heads_kv, g = gl_WorkGroupID.z;
  const uint rows = pc.queries * group, row0 = gl_WorkGroupID.y * ROWS;
  if (LM_INFINITE != 0u) {
    main_lm_infinite(group, g, rows, row0);
    return;
  }
  const uint s0 = gl_WorkGroupID.x * W * SLOTS + gl_LocalInvocationID.x;
  // Element offsets of the tile's key and query rows, past-the-end ones
  // clamped to the last (read, never written).
  uint k_at[SLOTS];
  [[unroll]] for (uint j = 0u; j < SLOTS; ++j)
    k_at[j] = min(s0 + j * W, pc.held - 1u) * pc.kv_key_stride + g * pc.head_dim;
  uint q_at[ROWS];
  [[unroll]] for (uint r = 0u; r < ROWS; ++r) {
    const uint row = min(row0 + r, rows - 1u), query = row / group, h = g * group + row % group;
    q_at[r] = ((pc.ring_first + query) % pc.ring_capacity) * pc.ring_q_stride + h * pc.head_dim;
  }
  vec4 acc[ROWS * SLOTS];
  [[unroll]] for (uint t = 0u; t < ROWS * SLOTS; ++t) acc[t] = vec4(0.0);
  if ((pc.head_dim & 3u) == 0u) {  // every row then starts on a vec4
    const uint quads = pc.head_dim / 4u;
#ifdef SUBGROUP_SHUFFLE
    const uint chunks = SHARE > 1u ? quads / SHARE : 0u;  // of SHARE quads, one loaded per lane
    const uint share_lane = gl_SubgroupInvocationID % SHARE;
#else
    const uint chunks = 0u, share_lane = 0u;
#endif
    for (uint c = 0u; c < chunks; ++c) {
      vec4 own[ROWS];
      [[unroll]] for (uint r = 0u; r < ROWS; ++r)
        own[r] = pc.scale * RING_LOAD4(q_at[r] + 4u * (c * SHARE + share_lane));
      [[unroll]] for (uint q = 0u; q < SHARE; ++q) {
        vec4 k[SLOTS];
        [[unroll]] for (uint j = 0u; j < SLOTS; ++j) k[j] = KV_LOAD4(pc.kv_key_offset, k_at[j] + 4u * (c * SHARE + q));
        [[unroll]] for (uint r = 0u; r < ROWS; ++r) {
          const vec4 a = shared_quad(own[r], q);
          [[unroll]] for (uint j = 0u; j < SLOTS; ++j) ACC(r, j) = fma(a, k[j], ACC(r, j));
        }
      }
    }
    // The quads past the last whole chunk, each lane loading its own.
    for (uint i = chunks * SHARE; i < quads; ++i) {
      vec4 k[SLOTS];
      [[unroll]] for (uint j = 0u; j < SLOTS; ++j) k[j] = KV_LOAD4(pc.kv_key_offset, k_at[j] + 4u * i);
      [[unroll]] for (uint r = 0u; r < ROWS; ++r) {
        const vec4 a = pc.scale * RING_LOAD4(q_at[r] + 4u * i);
        [[unroll]] for (uint j = 0u; j < SLOTS; ++j) ACC(r, j) = fma(a, k[j], ACC(r, j));
      }
    }
  } else {
    for (uint d = 0u; d < pc.head_dim; ++d) {
      float k[SLOTS];
      [[unroll]] for (uint j = 0u; j < SLOTS; ++j) k[j] = STORED_LOAD(kv, pc.kv_key_offset, k_at[j] + d);
      [[unroll]] for (uint r = 0u; r < ROWS; ++r) {
        const float a = pc.scale * STORED_LOAD(ring, 0u, q_at[r] + d);
        [[unroll]] for (uint j = 0u; j < SLOTS; ++j) ACC(r, j).x = fma(a, k[j], ACC(r, j).x);
      }
    }
  }
  int p_key[SLOTS];
  uint key_tag[SLOTS];
  [[unroll]] for (uint j = 0u; j < SLOTS; ++j) {
    const uint slot = min(s0 + j * W, pc.held - 1u);
    p_key[j] = int(kv[pc.kv_pos_offset + slot]);
    key_tag[j] = kv[pc.kv_tag_offset + slot];
  }
  [[unroll]] for (uint r = 0u; r < ROWS; ++r) {
    if (row0 + r >= rows) break;
    const Row row = row_at(row0 + r, g, group);
    [[unroll]] for (uint j = 0u; j < SLOTS; ++j)
      if (s0 + j * W < pc.held)
        logits[(row.query * pc.heads_q + row.h) * pc.logit_stride + s0 + j * W] =
            finish(row, p_key[j], key_tag[j], sum4(ACC(r, j)));
  }
}
