#version 450
// C[r][o] = sum_i A[r][i] * W[o][i] (+ bias[o]) (+ R[r][o]) without shared
// memory or barriers, for CPU devices such as lavapipe (see
// DeviceCaps::KernelStyle), where every buffer load is a per-lane gather and
// so costs far more than arithmetic. Same result as matmul.comp and
// matvec.comp; weight encodings as there (weights.glsl).
//
// Float types: each invocation owns one output o and ROWS rows, and reads A
// and W rows straight from their buffers, four values at a time when every
// row starts on a vec4 (scalar otherwise). -DHALF_MATH (fp16 A and W):
// products in fp16, four at a time, their sums accumulated in fp32
// (half_math.glsl).
// Block types (-DWEIGHTS_Q4_0 ...): each invocation owns one output and ROWS
// rows, decodes its weights one decode unit at a time (scales once per
// block) and applies each decoded value to every row. All invocations of a
// workgroup need the same A values, so SHARE invocations of a subgroup each
// load a 1/SHARE of them and pass them around with subgroupShuffle, which
// costs a CPU device a fraction of a load (rows past `rows` and outputs past
// `out` repeat the last one's reads, keeping every invocation in the
// shuffles, and are not written).
//
// Bindings:  as matmul.comp (0 A (input_rows.glsl), 1 W + bias, 2 C, 3 R)
// Spec constants: 0 workgroup size W, 1 ROWS rows per invocation, 2 SHARE
//                 (block types: a power of two <= the subgroup size and
//                 kMatmulDirectMaxShare; W a multiple of the subgroup size)
// Push constants: MatmulParams (interface/matmul.h); lanes is unused
// Dispatch: ceil(out / W) * ceil(rows / ROWS) logical groups, folded
//           (kernels::fold_groups); output groups vary fastest.
#extension GL_GOOGLE_include_directive : require
#if defined(WEIGHTS_F16) || defined(INPUT_F16)  // 16-bit loads of W or A
#extension GL_EXT_shader_16bit_storage : require
#endif
#ifdef WEIGHTS_INT8  // 8-bit loads of Q8_0 quants
#extension GL_EXT_shader_8bit_storage : require
#endif
#ifdef HALF_MATH  // fp16 products (half_math.glsl): shaderFloat16
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#endif
#extension GL_KHR_shader_subgroup_shuffle : enable  // block types only
#extension GL_EXT_control_flow_attributes : enable  // [[unroll]]: see the block types' main
#include "interface/matmul.h"
#include "rows.glsl"
#include "weights.glsl"
#include "input_rows.glsl"
#ifdef HALF_MATH
#include "half_math.glsl"
#endif

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint ROWS = 8;
layout(constant_id = 2) const uint SHARE = 1;

layout(std430, binding = 2) buffer CRows { float c_rows[]; };
layout(std430, binding = 3) readonly buffer RRows { float r_rows[]; };

// Writes output o of row r: the product plus bias and residual.
void store(uint r, uint o, float sum) {
  if (pc.has_bias != 0u) sum += weight_float(pc.bias_offset + o);
  if (pc.has_residual == kResidualSeparate) sum += r_rows[ROW_WORD(r, r) + o];
  if (pc.has_residual == kResidualInC) sum += c_rows[ROW_WORD(c, r) + o];
  c_rows[ROW_WORD(c, r) + o] = sum;
}

#ifdef WEIGHTS_BLOCKS

const uint QUADS = QUANT_UNIT / 4u;  // A quads per decode unit and row
const uint OWN = QUADS / SHARE;      // of which each invocation loads

// A values e..e+3 (e % 4 == 0) of the row at word `row`: one vector load
// when every A row starts aligned (`vec`), four scalar loads otherwise
// (rows of a ring).
vec4 a_quad(uint row, uint e, bool vec) { return vec ? a_load4_aligned(row, e) : a_load4(row, e); }

void main() {
  const uint W = gl_WorkGroupSize.x;
  const uint out_groups = (pc.out_dim + W - 1u) / W;
  const uint groups = out_groups * ((pc.rows + ROWS - 1u) / ROWS);
  const uint row_bytes = block_row_bytes(pc.in_dim);
  const uint share_lane = gl_SubgroupInvocationID % SHARE;
  const bool vec = a_rows_vec_aligned();
  for (uint g = group_index(); g < groups; g += group_count()) {
    const uint o = (g % out_groups) * W + gl_LocalInvocationID.x;
    const uint row0 = (g / out_groups) * ROWS;
    const uint w_row = pc.w_offset + min(o, pc.out_dim - 1u) * row_bytes;
    uint a_row[ROWS];
    [[unroll]] for (uint r = 0u; r < ROWS; ++r) a_row[r] = ROW_WORD(a, min(row0 + r, pc.rows - 1u));
    float acc[ROWS];
    [[unroll]] for (uint r = 0u; r < ROWS; ++r) acc[r] = 0.0;
    for (uint k = 0u; k < pc.in_dim / QUANT_VALUES; ++k) {
      const uint byte = w_row + k * QUANT_BYTES;
      const QuantBlock b = quant_block(byte);
      for (uint unit = 0u; unit < QUANT_VALUES / QUANT_UNIT; ++unit) {
        float v[QUANT_UNIT];
        quant_unit(b, byte, unit, v);
        const uint quad0 = (k * QUANT_VALUES + unit * QUANT_UNIT) / 4u;
        [[unroll]] for (uint r = 0u; r < ROWS; ++r) {
          // This invocation's quads of the unit: share_lane, share_lane + SHARE, ...
          vec4 own[OWN];
          [[unroll]] for (uint j = 0u; j < OWN; ++j) own[j] = a_quad(a_row[r], 4u * (quad0 + j * SHARE + share_lane), vec);
          float s = acc[r];
          [[unroll]] for (uint q = 0u; q < QUADS; ++q) {
            const vec4 quad = subgroupShuffle(own[q / SHARE], q % SHARE);
            s = fma(quad.x, v[4u * q], s);
            s = fma(quad.y, v[4u * q + 1u], s);
            s = fma(quad.z, v[4u * q + 2u], s);
            s = fma(quad.w, v[4u * q + 3u], s);
          }
          acc[r] = s;
        }
      }
    }
    [[unroll]] for (uint r = 0u; r < ROWS; ++r)
      if (o < pc.out_dim && row0 + r < pc.rows) store(row0 + r, o, acc[r]);
  }
}

#else

#ifdef WEIGHTS_F16
layout(std430, binding = 1) readonly buffer Weights16x4 { f16vec4 w16x4[]; };  // aliases the weights
vec4 weight4(uint i) { return vec4(w16x4[i]); }  // i in units of 4 elements
#elif defined(WEIGHTS_F16_WORDS)
layout(std430, binding = 1) readonly buffer WeightWords2 { uvec2 w_words2[]; };
vec4 weight4(uint i) {
  const uvec2 w = w_words2[i];
  return vec4(unpackHalf2x16(w.x), unpackHalf2x16(w.y));
}
#elif defined(WEIGHTS_BF16)
layout(std430, binding = 1) readonly buffer WeightWords2 { uvec2 w_words2[]; };
vec4 weight4(uint i) {
  const uvec2 w = w_words2[i];
  return uintBitsToFloat(uvec4(w.x << 16u, w.x & 0xFFFF0000u, w.y << 16u, w.y & 0xFFFF0000u));
}
#else
layout(std430, binding = 1) readonly buffer Weights32x4 { vec4 w32x4[]; };
vec4 weight4(uint i) { return w32x4[i]; }
#endif

void main() {
  const uint W = gl_WorkGroupSize.x;
  const uint out_groups = (pc.out_dim + W - 1u) / W;
  const uint groups = out_groups * ((pc.rows + ROWS - 1u) / ROWS);
  // Every A row and W row starts on a vec4 when all offsets and strides do.
  const bool vec = ((pc.in_dim | pc.w_offset) & 3u) == 0u && a_rows_vec_aligned();
  for (uint g = group_index(); g < groups; g += group_count()) {
    const uint o = (g % out_groups) * W + gl_LocalInvocationID.x;
    if (o >= pc.out_dim) continue;
    const uint row0 = (g / out_groups) * ROWS;
    const uint w_row = pc.w_offset + o * pc.in_dim;
    for (uint r = row0; r < min(pc.rows, row0 + ROWS); ++r) {
      const uint a_row = ROW_WORD(a, r);
      float sum = 0.0;
#ifdef HALF_MATH
      if (vec) {
        for (uint i = 0u; i < pc.in_dim / 4u; ++i)
          sum += group_product(a_half4_aligned(a_row, 4u * i), w16x4[w_row / 4u + i]);
      } else {
        for (uint i = 0u; i < pc.in_dim; i += 4u)
          sum += group_product(a_group(a_row, i, pc.in_dim), w_group(w_row, i, pc.in_dim));
      }
#else
      if (vec) {
        vec4 acc = vec4(0.0);
        for (uint i = 0u; i < pc.in_dim / 4u; ++i) acc = fma(a_load4_aligned(a_row, 4u * i), weight4(w_row / 4u + i), acc);
        sum = (acc.x + acc.y) + (acc.z + acc.w);
      } else {
        for (uint i = 0u; i < pc.in_dim; ++i) sum = fma(a_load(a_row, i), weight(w_row + i), sum);
      }
#endif
      store(r, o, sum);
    }
  }
}

#endif
