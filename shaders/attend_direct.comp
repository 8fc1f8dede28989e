#version 450
// Attend (spec 2.3) without shared memory or barriers, for CPU devices such
// as lavapipe (DeviceCaps::KernelStyle::direct). Same output as attend.comp:
// the output row and each entry's weight (-1 for list entries outside R:
// masked or padding), which usage.comp reads.
//
// attend.comp spreads a row's dims over a workgroup and passes each entry's
// weight through shared memory, one barrier per chunk and tree level; on a
// CPU device a barrier is a context switch and every load a scalar load per
// lane, so there one invocation owns a (query, head) row and QUADS quads of
// its dims (a register tile: D = 64 is one invocation per row at QUADS 16),
// and walks its list three times: the maximum logit, the sum of
// exponentials (in attend.comp's order, below), then the weights and the weighted sum of values, each entry's slot and logit read once per walk and each
// value quad once (four values per load when head_dim is a multiple of 4,
// scalar otherwise); the weights and products are attend.comp's. Lists of
// one row differ per head (GQA shares keys, not lists), so rows share no
// loads; heads of a shared-mode list could, not done here.
//
// Values as the memory stores them (stored.glsl); math in fp32.
//
// The sum of exponentials is added in attend.comp's order (exp_sum below),
// so that weights and outputs equal its bits: eviction policies fed by the
// weights then decide as attend.comp's do (an online or plain sequential
// sum rounds differently, which moved the reader's lra_sum decisions off the
// float64 reference).
//
// Bindings: as attend.comp (0 logits, 1 top-K lists, 2 K/V memory,
//           3 attention buffer (outputs, weights)); KV_TEXEL builds
//           also 4: binding 2's range as R32G32B32A32_SFLOAT texels
// Spec constants: 0 workgroup size W, 1 QUADS dim quads per invocation,
//                 2 SUM_LANES: attend.comp's workgroup size (a power of
//                 two <= 64), whose summation order exp_sum follows
// Dispatch: ceil(queries * heads_q * ceil(head_dim / (4 QUADS)) / W);
//           invocation i: row i / blocks, dims from 4 QUADS (i % blocks)
#extension GL_GOOGLE_include_directive : require
#include "stored.glsl"
#extension GL_EXT_control_flow_attributes : enable  // [[unroll]]: acc stays in registers
#include "common.glsl"
#include "interface/retrieve.h"

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint QUADS = 16;
layout(constant_id = 2) const uint SUM_LANES = 64;

layout(std430, binding = 0) readonly buffer Logits { float logits[]; };
layout(std430, binding = 1) readonly buffer Lists { uint lists[]; };
layout(std430, binding = 2) readonly buffer KvMemory { uint kv[]; };
STORED_VIEWS(2, kv)
KV_TEXELS(4)  // KV_TEXEL: the values as texels (stored.glsl)
layout(std430, binding = 3) writeonly buffer Attention { uint attention[]; };

#include "retrieved.glsl"

float logit_of(uint row, uint slot) {
  return slot == kInvalid ? NEG_INF : logits[row * pc.logit_stride + slot];
}

// attend.comp's sum of exp(l - top) over the row's list, bit for bit: its
// lane t (of SUM_LANES) adds entries t, t + SUM_LANES, ... in turn, then a
// tree adds lane t + stride into lane t for stride = SUM_LANES / 2, ..., 1.
// That tree pairs lanes whose indices differ in the top bit first, so it is
// the contiguous pairwise tree over the lanes taken in bit-reversed order:
// visiting them so, a stack of partial sums merges each completed pair
// (the trailing one bits of the visit count). The visits are unrolled so
// that every stack index is a constant (registers, not a private array).
float exp_sum(uint query, uint head, uint row, float top) {
  const uint sum_bits = uint(findMSB(SUM_LANES));  // log2(SUM_LANES)
  float stack[7];  // log2(64) + 1 partial sums at most
  [[unroll]] for (uint i = 0u; i < 7u; ++i) stack[i] = 0.0;
  uint depth = 0u;
  [[unroll]] for (uint j = 0u; j < SUM_LANES; ++j) {
    const uint t = sum_bits == 0u ? 0u : bitfieldReverse(j) >> (32u - sum_bits);
    float v = 0.0;
    for (uint r = t; r < pc.list_count; r += SUM_LANES) {
      const float l = logit_of(row, retrieved_slot(query, head, r));
      if (l != NEG_INF) v += exp(l - top);
    }
    [[unroll]] for (uint m = j; (m & 1u) != 0u; m >>= 1u) v = stack[--depth] + v;
    stack[depth++] = v;
  }
  return stack[0];
}

void main() {
  const uint span = 4u * QUADS;  // dims per invocation
  const uint blocks = (pc.head_dim + span - 1u) / span;
  const uint rows = pc.queries * pc.heads_q;
  const uint at = gl_GlobalInvocationID.x;
  if (at >= rows * blocks) return;
  const uint row = at / blocks, d0 = (at % blocks) * span;
  const uint query = row / pc.heads_q, head = row % pc.heads_q;
  const uint g = head / (pc.heads_q / pc.heads_kv);
  const bool vec = (pc.head_dim & 3u) == 0u;  // every value row then starts on a vec4

  // The maximum, then the sum of exponentials in attend.comp's order.
  float top = NEG_INF;
  for (uint r = 0u; r < pc.list_count; ++r) top = max(top, logit_of(row, retrieved_slot(query, head, r)));
  const float total = top != NEG_INF ? exp_sum(query, head, row, top) : 0.0;

  vec4 acc[QUADS];
  [[unroll]] for (uint k = 0u; k < QUADS; ++k) acc[k] = vec4(0.0);
  for (uint r = 0u; r < pc.list_count; ++r) {
    const uint slot = retrieved_slot(query, head, r);
    const float l = logit_of(row, slot);
    const float weight = l != NEG_INF ? exp(l - top) / total : -1.0;
    if (d0 == 0u) attention[pc.weight_offset + row * pc.weight_stride + r] = floatBitsToUint(weight);
    if (weight < 0.0) continue;
    const uint v_base = slot * pc.kv_value_stride + g * pc.head_dim + d0;  // elements into the values
    [[unroll]] for (uint k = 0u; k < QUADS; ++k) {
      const uint d = d0 + 4u * k;
      if (d >= pc.head_dim) break;
      vec4 v = vec4(0.0);
      if (vec) {
        v = KV_LOAD4(pc.kv_value_offset, v_base + 4u * k);
      } else {
        [[unroll]] for (uint i = 0u; i < 4u; ++i)
          if (d + i < pc.head_dim) v[i] = STORED_LOAD(kv, pc.kv_value_offset, v_base + 4u * k + i);
      }
      acc[k] = fma(vec4(weight), v, acc[k]);
    }
  }
  const uint out_row = pc.out_offset + ((pc.out_first_query + query) * pc.heads_q + head) * pc.head_dim;
  [[unroll]] for (uint k = 0u; k < QUADS; ++k)
    [[unroll]] for (uint i = 0u; i < 4u; ++i)
      if (d0 + 4u * k + i < pc.head_dim) attention[out_row + d0 + 4u * k + i] = floatBitsToUint(acc[k][i]);
}
