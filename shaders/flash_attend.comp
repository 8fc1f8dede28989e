#version 450
// Dense attention (spec 2.2-2.3 with K >= M: every unmasked held entry) in
// one pass over the K/V memory, with no logits buffer: each invocation owns
// one (query, head) row and walks its split's slots in blocks of BLOCK,
// keeping a running max m, a running sum l of exp(logit - m) and the
// accumulator of exp(logit - m) * v, rescaled by exp(m_old - m_new) once
// per block. Same masks, bias and scaling as score.comp (the query scaled
// before the dot product), and attend.comp's empty rows: no unmasked entry
// gives the output 0 (and a log-sum-exp of -inf).
//
// A workgroup holds rows of one key/value head g (dispatch z), so the GQA
// heads of a group read each key and value once per workgroup:
//   tiled (default, GPUs): the workgroup loads each block of keys and
//     values into shared memory once, then every row reads it there;
//   DIRECT (CPU devices such as lavapipe): no barriers; every invocation
//     reads the block from the buffer at the same address (a broadcast on
//     SIMD CPU drivers, not a gather), as vec4 loads when HEAD_DIM % 4 == 0.
//     fp32 memories and head_dim <= 16 only: past that lavapipe's LLVM
//     takes over a minute on this build, and with fp16 rows at head_dim 64
//     it fails ("Do not know how to split the result of this operator",
//     the queue never finishes); those take the tiled build (kernels/flash.cpp).
//
// LANES (with DIRECT, where subgroup shuffles are present): each row is
// LANE_SPLITS consecutive lanes of one subgroup, each walking every
// LANE_SPLITS-th slot of the split; the lanes then merge their
// (m, l, acc) by a butterfly of subgroupShuffleXor, and the row's lane 0
// writes it. Lane i of a row walks slots i, i + LANE_SPLITS, ...: the
// lanes' loads of one step are neighbouring slots. A decoding step's query fills 1-8 rows per K/V head: one row
// per invocation left 6-7 of a SIMD CPU's 8 lanes idle while the busy ones
// walked every slot; its lanes now walk 1/LANE_SPLITS of them each.
//
// Loops: the slot loop of one invocation covers `chunk` slots; the host
// picks chunk so that an invocation's loop iterations stay within the
// driver's limit (DeviceCaps::max_loop_iterations) and splits the slots
// over dispatch y; with splits > 1 each split writes its partial (acc, m, l)
// and flash_combine.comp merges them.
//
// Keys, values and queries as the memories store them (stored.glsl); math fp32.
//
// Bindings:  0 Q ring (q floats, positions, valid, tags)   read
//            1 K/V memory (keys, values, positions, tags, T5 tables) read
//            2 outputs and log-sum-exp (splits == 1)      write
//            3 partials (splits > 1)                      write
//            4 (DIRECT KV_TEXEL) binding 1's range as R32G32B32A32_SFLOAT texels read
// Spec constants: 0 workgroup size W, 1 HEAD_DIM, 2 BLOCK slots per step
//                 (tiled: 2 * BLOCK * ceil(HEAD_DIM / 4) vec4 in shared memory),
//                 3 SCORE_FEATURES (interface/positions.h; default: all),
//                 4 LANE_SPLITS (LANES: lanes per row, a power of two
//                   dividing the subgroup size; W a multiple of that size)
// Dispatch: (ceil(queries * group / (W / LANE_SPLITS)), splits, heads_kv)
#extension GL_GOOGLE_include_directive : require
#include "stored.glsl"
#include "common.glsl"
#include "interface/flash.h"
#extension GL_EXT_control_flow_attributes : enable  // [[unroll]]: q, acc and logit stay in registers
#ifdef LANES
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_shuffle : require
#endif

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint HEAD_DIM = 64;
layout(constant_id = 2) const uint BLOCK = 16;
layout(constant_id = 3) const uint SCORE_FEATURES = kScoreAllFeatures;  // interface/positions.h
layout(constant_id = 4) const uint LANE_SPLITS = 1;
const uint QUADS = (HEAD_DIM + 3u) / 4u;
const bool ALIGNED = (HEAD_DIM & 3u) == 0u;  // rows start on vec4s: vector loads

layout(std430, binding = 0) readonly buffer QRing { uint ring[]; };
layout(std430, binding = 1) readonly buffer KvMemory { uint kv[]; };
STORED_VIEWS(0, ring)
STORED_VIEWS(1, kv)
layout(std430, binding = 2) writeonly buffer Outputs { float outputs[]; };
layout(std430, binding = 3) writeonly buffer Partials { float partials[]; };

#define NO_LM_INFINITE
#include "score_positions.glsl"

// Quad d4 of a row that starts at element `at` of a section, zeros past HEAD_DIM.
#define ROW_QUAD(name, section, at, d4) \
  (ALIGNED ? STORED_LOAD4(name, section, (at) + 4u * (d4)) : row_quad_scalar_##name(section, at, d4))
vec4 row_quad_scalar_ring(uint section, uint at, uint d4) {
  vec4 x = vec4(0.0);
  for (uint i = 0u; i < 4u; ++i)
    if (4u * d4 + i < HEAD_DIM) x[i] = STORED_LOAD(ring, section, at + 4u * d4 + i);
  return x;
}
vec4 row_quad_scalar_kv(uint section, uint at, uint d4) {
  vec4 x = vec4(0.0);
  for (uint i = 0u; i < 4u; ++i)
    if (4u * d4 + i < HEAD_DIM) x[i] = STORED_LOAD(kv, section, at + 4u * d4 + i);
  return x;
}

// DIRECT with KV_TEXEL: the key and value quads of HEAD_DIM % 4 == 0 rows
// fetched from binding 4, binding 1's range as texels (stored.glsl's
// KV_LOAD4; a storage-buffer load otherwise).
KV_TEXELS(4)
#define KV_QUAD(section, at, d4) \
  (ALIGNED ? KV_LOAD4(section, (at) + 4u * (d4)) : row_quad_scalar_kv(section, at, d4))

#ifndef DIRECT
shared vec4 k_tile[BLOCK * QUADS];
shared vec4 v_tile[BLOCK * QUADS];
#endif

// Key and value quad d4 of block entry j (held slot `slot`): from the
// tiles, or straight from the memory.
vec4 key_quad(uint slot, uint j, uint g, uint d4) {
#ifdef DIRECT
  return KV_QUAD(pc.kv_key_offset, slot * pc.kv_key_stride + g * HEAD_DIM, d4);
#else
  return k_tile[j * QUADS + d4];
#endif
}
vec4 value_quad(uint slot, uint j, uint g, uint d4) {
#ifdef DIRECT
  return KV_QUAD(pc.kv_value_offset, slot * pc.kv_value_stride + g * HEAD_DIM, d4);
#else
  return v_tile[j * QUADS + d4];
#endif
}

void main() {
  const uint tid = gl_LocalInvocationID.x, W = gl_WorkGroupSize.x;
  const uint group = pc.heads_q / pc.heads_kv, g = gl_WorkGroupID.z, split = gl_WorkGroupID.y;
  const uint rows = pc.queries * group;
#ifdef LANES
  // Rows by subgroup, so that a row's lanes share one (full) subgroup.
  const uint lane = gl_SubgroupInvocationID % LANE_SPLITS;
  const uint local_row = gl_SubgroupID * (gl_SubgroupSize / LANE_SPLITS) + gl_SubgroupInvocationID / LANE_SPLITS;
#else
  const uint lane = 0u, local_row = tid;
#endif
  const uint row = gl_WorkGroupID.x * (W / LANE_SPLITS) + local_row;  // (query, head in group)
  // Rows past the batch read the last row's query and write nothing; in
  // the tiled build they still join the loads and barriers.
  const bool in_batch = row < rows;
  const uint query = min(row, rows - 1u) / group, h = g * group + min(row, rows - 1u) % group;
  const uint ring_row = (pc.ring_first + query) % pc.ring_capacity;
  const int p_query = int(ring[pc.ring_pos_offset + ring_row]);
  const bool query_valid = ring[pc.ring_valid_offset + ring_row] != 0u;
  const uint query_tag = ring[pc.ring_tag_offset + ring_row];

  vec4 q[QUADS];
  vec4 acc[QUADS];
  const uint q_at = ring_row * pc.ring_q_stride + h * HEAD_DIM;
  [[unroll]] for (uint d4 = 0u; d4 < QUADS; ++d4) {
    // Scaled before the dot product, as score.comp does (see score_direct.comp).
    q[d4] = pc.scale * ROW_QUAD(ring, 0u, q_at, d4);
    acc[d4] = vec4(0.0);
  }
  float m = NEG_INF, l = 0.0;

  // The lane's entry i is the split's slot lane + LANE_SPLITS * i: a row's
  // lanes read neighbouring slots (without LANES, every slot in order).
  const uint split_first = split * pc.chunk;
  const uint split_slots = min(pc.held, split_first + pc.chunk) - split_first;
  const uint lane_slots = split_slots > lane ? (split_slots - lane + LANE_SPLITS - 1u) / LANE_SPLITS : 0u;
  const uint lane_first = split_first + lane;
#ifdef DIRECT
  // No barriers: rows past the batch walk no slots. A decoding step's one
  // query fills 2-8 rows of a workgroup of 64, and on a SIMD CPU driver the
  // empty lanes' batches would otherwise walk every slot too.
  const uint walked = in_batch ? lane_slots : 0u;
#else
  const uint walked = lane_slots;
#endif
  for (uint base = 0u; base < walked; base += BLOCK) {
    const uint count = min(BLOCK, walked - base);  // tiled: uniform over the workgroup
#ifndef DIRECT
    for (uint i = tid; i < count * QUADS; i += W) {
      const uint j = i / QUADS, d4 = i % QUADS, slot = lane_first + base + j;
      k_tile[i] = ROW_QUAD(kv, pc.kv_key_offset, slot * pc.kv_key_stride + g * HEAD_DIM, d4);
      v_tile[i] = ROW_QUAD(kv, pc.kv_value_offset, slot * pc.kv_value_stride + g * HEAD_DIM, d4);
    }
    barrier();  // the block's keys and values are in place
#endif
    float logit[BLOCK];
    float top = NEG_INF;
    [[unroll]] for (uint j = 0u; j < BLOCK; ++j) {
      logit[j] = NEG_INF;
      if (j >= count) continue;
      const uint slot = lane_first + LANE_SPLITS * (base + j);
      const int p_key = int(kv[pc.kv_pos_offset + slot]);
      bool masked = !query_valid;
      masked = masked || (pc.causal != 0u && p_key > p_query) || outside_window(p_query, p_key);
      masked = masked || (tag_masking() && kv[pc.kv_tag_offset + slot] != query_tag);
      if (masked) continue;
      vec4 dot4 = vec4(0.0);
      [[unroll]] for (uint d4 = 0u; d4 < QUADS; ++d4) dot4 = fma(q[d4], key_quad(slot, j, g, d4), dot4);
      logit[j] = pair_logit((dot4.x + dot4.y) + (dot4.z + dot4.w), h, p_query, p_key);
      top = max(top, logit[j]);
    }
    const float m_new = max(m, top);
    if (m_new != NEG_INF) {  // else nothing unmasked yet: m, l and acc stay as they are
      // exp(-inf) is avoided rather than trusted to give 0 on every driver.
      const float rescale = m == NEG_INF ? 0.0 : exp(m - m_new);
      l *= rescale;
      [[unroll]] for (uint d4 = 0u; d4 < QUADS; ++d4) acc[d4] *= rescale;
      [[unroll]] for (uint j = 0u; j < BLOCK; ++j) {
        if (j >= count) continue;
        const float p = logit[j] == NEG_INF ? 0.0 : exp(logit[j] - m_new);
        const uint slot = lane_first + LANE_SPLITS * (base + j);
        l += p;
        [[unroll]] for (uint d4 = 0u; d4 < QUADS; ++d4) acc[d4] = fma(vec4(p), value_quad(slot, j, g, d4), acc[d4]);
      }
      m = m_new;
    }
#ifndef DIRECT
    barrier();  // everyone read the block before the next overwrites it
#endif
  }
#ifdef LANES
  // The row's lanes merge as flash_combine.comp merges splits: rescaled to
  // the larger max (a lane with no unmasked entry holds m = -inf, l = 0,
  // acc = 0 and weighs 0). Every lane takes part, rows past the batch too.
  [[unroll]] for (uint step = LANE_SPLITS / 2u; step >= 1u; step /= 2u) {
    const float m_other = subgroupShuffleXor(m, step), l_other = subgroupShuffleXor(l, step);
    const float m_new = max(m, m_other);
    const float mine = m == NEG_INF ? 0.0 : exp(m - m_new);
    const float theirs = m_other == NEG_INF ? 0.0 : exp(m_other - m_new);
    l = l * mine + l_other * theirs;
    [[unroll]] for (uint d4 = 0u; d4 < QUADS; ++d4)
      acc[d4] = acc[d4] * mine + subgroupShuffleXor(acc[d4], step) * theirs;
    m = m_new;
  }
#endif
  if (!in_batch || lane != 0u) return;

  const uint out_row = (pc.out_first_query + query) * pc.heads_q + h;
  if (pc.splits == 1u) {
    const float inv = l > 0.0 ? 1.0 / l : 0.0;  // l = 0: no unmasked entry, the output is 0
    const uint at = pc.out_offset + out_row * HEAD_DIM;
    [[unroll]] for (uint d4 = 0u; d4 < QUADS; ++d4)
      [[unroll]] for (uint i = 0u; i < 4u; ++i)
        if (4u * d4 + i < HEAD_DIM) outputs[at + 4u * d4 + i] = acc[d4][i] * inv;
    outputs[pc.lse_offset + out_row] = l > 0.0 ? m + log(l) : NEG_INF;
  } else {
    const uint at = pc.partial_offset +
                    ((split * pc.queries + query) * pc.heads_q + h) * ATT_FLASH_PARTIAL_WORDS(HEAD_DIM);
    [[unroll]] for (uint d4 = 0u; d4 < QUADS; ++d4)
      [[unroll]] for (uint i = 0u; i < 4u; ++i)
        if (4u * d4 + i < HEAD_DIM) partials[at + 4u * d4 + i] = acc[d4][i];
    partials[at + HEAD_DIM] = m;
    partials[at + HEAD_DIM + 1u] = l;
  }
}
