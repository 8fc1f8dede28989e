#version 450
// C[r][o] = sum_i A[r][i] * W[o][i] (+ bias[o]) (+ R[r][o]) without shared
// memory or barriers, for CPU devices such as lavapipe (see
// DeviceCaps::KernelStyle), where every buffer load is a per-lane gather and
// so costs far more than arithmetic. Same result as matmul.comp and
// matvec.comp; weight encodings as there (weights.glsl).
//
// Each invocation accumulates a register tile: ROWS rows of OUTS outputs
// (o, o + W, ...), so that a weight is read (and decoded) once for ROWS rows
// and an A value once for OUTS outputs; on a CPU device a load whose address
// differs per invocation costs a scalar load per lane, far more than an
// FMA, so loads per FMA set the speed. All invocations of a workgroup need
// the same A values: SHARE invocations of a subgroup each load a 1/SHARE of
// them and pass them around with subgroupShuffle, which costs a CPU device
// a fraction of a load (rows past `rows` and outputs past `out` repeat the
// last one's reads, keeping every invocation in the shuffles, and are not
// written).
// Float types read A and W rows four values at a time when every row starts
// on a vec4 (scalar otherwise); -DHALF_MATH (fp16 A and W): products in
// fp16, four at a time, their sums accumulated in fp32 (half_math.glsl), A
// not shared. Block types (-DWEIGHTS_Q4_0 ...) load a decode unit's packed
// words once (scales once per block) and decode them one quad at a time,
// each quad applied to all ROWS rows before the next: holding a whole
// decoded unit (32-128 values per output) spilled lavapipe's registers.
//
// RMS_IN (spec constant 5) RMS-normalizes the fp32 A rows on the way in,
// so that a block's norm costs no dispatch of its own (q, k, v, gate/up and
// the LM head read the rows the norm would have written):
//   C[r][o] = (sum_i A[r][i] * g[i] * W[o][i]) * inv(r) (+ bias[o]),
//   inv(r) = 1 / sqrt(mean_i A[r][i]^2 + eps),
// g the fp32 gains in binding 3 from norm_offset, inv as norm.comp's
// (inverse_deviation.glsl: NaN when the statistic leaves fp32). Every
// invocation sees every A value of its rows (a direct product does not
// split `in`), so each sums the squares itself, from the same values in
// the same order: the whole tile scales by one factor per row. No
// residual from binding 3 then; not with HALF_MATH (fp16 A).
// SPLIT_OUTPUT builds (texel builds only) write outputs from split_first
// on to binding 7 instead of C: [split_first, split_second) as the
// contiguous rows c2, the rest as the rows c3 (kernels::SplitRows), so that
// one product of stacked matrices ([wq; wk; wv]: the queries to the ring,
// the keys and values to the chunk) stores where each matrix's own
// product would have, in one dispatch instead of three.
// Bindings:  as matmul.comp (0 A (input_rows.glsl), 1 W + bias, 2 C, 3 R,
//            or with RMS_IN the gains);
//            the *_texel builds also 4: binding 1's range as a uniform texel
//            buffer, which the weight quads (WEIGHTS_TEXEL4, WEIGHTS_TEXEL2)
//            or the blocks' words (WEIGHTS_TEXEL_WORDS, weights.glsl) come
//            from, and 5: binding 0's as one of fp32 quads (INPUT_TEXEL,
//            input_rows.glsl), and 6: binding 3's as fp32 quads (the gains
//            under RMS_IN); lavapipe gathers texels as vectors, where a
//            storage-buffer load is a loop over the lanes;
//            SPLIT_OUTPUT also 7: the rows c2 and c3 (a fifth storage
//            buffer: only where the device allows one)
// Spec constants: 0 workgroup size W, 1 ROWS rows per invocation, 2 SHARE
//                 (a power of two <= the subgroup size and
//                 kMatmulDirectMaxShare; W a multiple of the subgroup size;
//                 1: no shuffles), 3 OUTS outputs per invocation,
//                 4 GATED: 0, or 1 + an activation kind (interface/activation_kinds.h):
//                 W holds 2 * out rows, the gate rows then the up rows, and
//                 C[r][o] = act(A[r] . W[o]) * (A[r] . W[out + o]) (SwiGLU,
//                 GeGLU: the FFN's gate, up and activation in one dispatch);
//                 OUTS = 2, output 0 the gate and 1 the up row of one o; no
//                 bias, no residual; 5 RMS_IN: 0, or 1 (above)
// Push constants: MatmulParams (interface/matmul.h); lanes is unused
// Dispatch: ceil(out / (W * OUTS)) (gated: ceil(out / W)) * ceil(rows / ROWS) logical groups, folded
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
#extension GL_KHR_shader_subgroup_shuffle : enable  // SHARE > 1
#extension GL_EXT_control_flow_attributes : enable  // [[unroll]]: see the block types' main
#include "interface/matmul.h"
#include "rows.glsl"
#include "weights.glsl"
#include "input_rows.glsl"
#include "activation.glsl"
#include "inverse_deviation.glsl"
#ifdef HALF_MATH
#include "half_math.glsl"
#endif

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint ROWS = 8;
layout(constant_id = 2) const uint SHARE = 1;
layout(constant_id = 3) const uint OUTS = 1;
layout(constant_id = 4) const uint GATED = 0;
layout(constant_id = 5) const uint RMS_IN = 0;

// The tile's outputs: invocation x of a logical group owns output
// o0 + j * W (j < OUTS) of `out`, reading weight row min(that, out - 1);
// gated, it owns output o0 alone and reads the gate row o0 (j = 0) and the
// up row out + o0 (j = 1).
uint tile_span() { return GATED != 0u ? gl_WorkGroupSize.x : gl_WorkGroupSize.x * OUTS; }
uint tile_weight_row(uint o0, uint j) {
  return GATED != 0u ? min(o0, pc.out_dim - 1u) + j * pc.out_dim : min(o0 + j * gl_WorkGroupSize.x, pc.out_dim - 1u);
}

layout(std430, binding = 2) buffer CRows { float c_rows[]; };
layout(std430, binding = 3) readonly buffer RRows { float r_rows[]; };
layout(std430, binding = 3) readonly buffer Gains4 { vec4 gain4[]; };  // RMS_IN: aliases RRows
#ifdef SPLIT_OUTPUT
layout(std430, binding = 7) buffer C2Rows { float c2_rows[]; };
#endif

#ifdef INPUT_TEXEL
// The gains as fp32 quads from binding 6 (binding 3's range viewed so):
// a storage-buffer load is a loop over the lanes on lavapipe, and one per
// A quad made the RMS-normalizing products 1.5-1.8x slower than the plain
// ones there (SmolLM-135M shape, F16). Plain products bind any fp32 view.
layout(binding = 6) uniform samplerBuffer gain_texels;
vec4 gain_quad(uint quad) { return RMS_IN == 0u ? vec4(1.0) : texelFetch(gain_texels, int(pc.norm_offset / 4u + quad)); }
#else
vec4 gain_quad(uint quad) { return RMS_IN == 0u ? vec4(1.0) : gain4[pc.norm_offset / 4u + quad]; }
#endif

// RMS_IN: A value quad `a` of a row (as loaded) on its way into the
// products: its squares join the row's sum, the gain quad `g` scales it.
// The chunked loops load one gain quad per lane and chunk and shuffle it
// as they do the A quads (shared_quad).
vec4 rms_in_quad(inout float squares, vec4 a, vec4 g) {
  if (RMS_IN == 0u) return a;
  squares = fma(a.w, a.w, fma(a.z, a.z, fma(a.y, a.y, fma(a.x, a.x, squares))));
  return a * g;
}
float rms_in_value(inout float squares, float a, uint i) {
  if (RMS_IN == 0u) return a;
  squares = fma(a, a, squares);
  return a * r_rows[pc.norm_offset + i];
}

// Writes output o of row r: the product plus bias and residual.
// SPLIT_OUTPUT: outputs from split_first on go to binding 7 (above), with
// no residual.
void store(uint r, uint o, float sum) {
  if (pc.has_bias != 0u) sum += weight_float(pc.bias_offset + o);
#ifdef SPLIT_OUTPUT
  if (o >= pc.split_first) {
    const bool third = o >= pc.split_second;
    c2_rows[third ? pc.c3_offset + r * pc.c3_stride + (o - pc.split_second)
                  : pc.c2_offset + r * pc.c2_stride + (o - pc.split_first)] = sum;
    return;
  }
#endif
  if (pc.has_residual == kResidualSeparate) sum += r_rows[ROW_WORD(r, r) + o];
  if (pc.has_residual == kResidualInC) sum += c_rows[ROW_WORD(c, r) + o];
  c_rows[ROW_WORD(c, r) + o] = sum;
}

// Writes gated output o of row r from its gate and up sums.
void store_gated(uint r, uint o, float gate, float up) {
  if (o < pc.out_dim) c_rows[ROW_WORD(c, r) + o] = activation_of(GATED - 1u, gate) * up;
}

// The register tile: invocation x of a workgroup of W owns outputs
// o0 + j * W (j < OUTS, o0 its group's first output + x) of rows
// row0 .. row0 + ROWS - 1, and accumulates acc[r * OUTS + j] for them.
// Outputs past out_dim and rows past `rows` read the last one's weights and
// A values (every invocation stays in the shuffles) and are not written.
#define ACC(r, j) acc[(r) * OUTS + (j)]

// Stores tile row r (row row0 + r, below `rows`): outputs o0 + j * W, or
// gated output o0 from its two sums.
#define STORE_TILE_ROW(row0, o0, r)                                                              \
  if (GATED != 0u) {                                                                             \
    store_gated((row0) + (r), o0, ACC(r, 0u), ACC(r, min(1u, OUTS - 1u)));                       \
  } else {                                                                                       \
    [[unroll]] for (uint j = 0u; j < OUTS; ++j)                                                  \
      if ((o0) + j * gl_WorkGroupSize.x < pc.out_dim) store((row0) + (r), (o0) + j * gl_WorkGroupSize.x, ACC(r, j)); \
  }

// Quad q (< SHARE) of the A values the SHARE lanes of this invocation's
// share group loaded one quad each (`own`, the quad of share_lane): the
// lane's own quad without sharing.
vec4 shared_quad(vec4 own, uint q) { return SHARE > 1u ? subgroupShuffle(own, q) : own; }

// acc += a . w, one fma per element (the four in order).
float fma4(vec4 a, vec4 w, float acc) { return fma(a.w, w.w, fma(a.z, w.z, fma(a.y, w.y, fma(a.x, w.x, acc)))); }

#ifdef WEIGHTS_BLOCKS

const uint QUADS = QUANT_UNIT / 4u;  // A quads per decode unit and row

void main() {
  const uint span = tile_span();  // outputs per logical group
  const uint out_groups = (pc.out_dim + span - 1u) / span;
  const uint groups = out_groups * ((pc.rows + ROWS - 1u) / ROWS);
  const uint row_bytes = block_row_bytes(pc.in_dim);
  const uint share_lane = gl_SubgroupInvocationID % SHARE;
  const bool vec = a_rows_vec_aligned();
  for (uint g = group_index(); g < groups; g += group_count()) {
    const uint o0 = (g % out_groups) * span + gl_LocalInvocationID.x;
    const uint row0 = (g / out_groups) * ROWS;
    uint w_row[OUTS];
    [[unroll]] for (uint j = 0u; j < OUTS; ++j) w_row[j] = pc.w_offset + tile_weight_row(o0, j) * row_bytes;
    uint a_row[ROWS];
    [[unroll]] for (uint r = 0u; r < ROWS; ++r) a_row[r] = ROW_WORD(a, min(row0 + r, pc.rows - 1u));
    float acc[ROWS * OUTS];
    [[unroll]] for (uint t = 0u; t < ROWS * OUTS; ++t) acc[t] = 0.0;
    float squares[ROWS];  // RMS_IN: each row's sum of squares
    [[unroll]] for (uint r = 0u; r < ROWS; ++r) squares[r] = 0.0;
    if (vec) {
      // A rows on vec4 boundaries. No branch in this loop: lavapipe runs
      // both sides of one, and a select between the vector load and four
      // scalar loads of A here cost the block types 1.6-1.9x
      // (attendre-bench --filter matmul). In chunks of SHARE quads: each
      // lane loads one quad of a chunk for every row; a weight quad is
      // decoded once and applied to all ROWS rows before the next (only
      // four decoded values per output live).
      for (uint k = 0u; k < pc.in_dim / QUANT_VALUES; ++k) {
        QuantBlock b[OUTS];
        [[unroll]] for (uint j = 0u; j < OUTS; ++j) b[j] = quant_block(w_row[j] + k * QUANT_BYTES);
        for (uint unit = 0u; unit < QUANT_VALUES / QUANT_UNIT; ++unit) {
          QuantUnit u[OUTS];
          [[unroll]] for (uint j = 0u; j < OUTS; ++j) u[j] = quant_unit_load(b[j], w_row[j] + k * QUANT_BYTES, unit);
          const uint quad0 = (k * QUANT_VALUES + unit * QUANT_UNIT) / 4u;
          [[unroll]] for (uint c = 0u; c < QUADS / SHARE; ++c) {
            vec4 own[ROWS];
            [[unroll]] for (uint r = 0u; r < ROWS; ++r) own[r] = a_load4_aligned(a_row[r], 4u * (quad0 + c * SHARE + share_lane));
            const vec4 own_gain = gain_quad(quad0 + c * SHARE + share_lane);
            [[unroll]] for (uint q = 0u; q < SHARE; ++q) {
              vec4 w[OUTS];
              [[unroll]] for (uint j = 0u; j < OUTS; ++j) w[j] = quant_quad(b[j], u[j], c * SHARE + q);
              const vec4 g = RMS_IN == 0u ? own_gain : shared_quad(own_gain, q);
              [[unroll]] for (uint r = 0u; r < ROWS; ++r) {
                const vec4 a = rms_in_quad(squares[r], shared_quad(own[r], q), g);
                [[unroll]] for (uint j = 0u; j < OUTS; ++j) ACC(r, j) = fma4(a, w[j], ACC(r, j));
              }
            }
          }
        }
      }
    } else {
      // A rows off vec4 boundaries: an offset or stride off four words (block
      // weights' `in` is a multiple of 32, so only a caller's layout, such as
      // a ring, puts them there). Value by value: lavapipe also runs this branch for aligned
      // rows, masked, once, which costs one value here and a whole block
      // with the unit loop (one of a row's six blocks at Q4_K's in = 1536).
      for (uint i = 0u; i < pc.in_dim; ++i) {
        float w[OUTS];
        [[unroll]] for (uint j = 0u; j < OUTS; ++j) w[j] = quant_value(w_row[j] + i / QUANT_VALUES * QUANT_BYTES, i % QUANT_VALUES);
        [[unroll]] for (uint r = 0u; r < ROWS; ++r) {
          const float a = rms_in_value(squares[r], a_load(a_row[r], i), i);
          [[unroll]] for (uint j = 0u; j < OUTS; ++j) ACC(r, j) = fma(a, w[j], ACC(r, j));
        }
      }
    }
    if (RMS_IN != 0u) {
      [[unroll]] for (uint r = 0u; r < ROWS; ++r) {
        const float inv = inverse_deviation(squares[r] / float(pc.in_dim) + pc.norm_eps);
        [[unroll]] for (uint j = 0u; j < OUTS; ++j) ACC(r, j) *= inv;
      }
    }
    [[unroll]] for (uint r = 0u; r < ROWS; ++r)
      if (row0 + r < pc.rows) { STORE_TILE_ROW(row0, o0, r) }
  }
}

#else

#if defined(WEIGHTS_TEXEL4)
// f32 or f16 weights as a uniform texel buffer (R32G32B32A32_SFLOAT or
// R16G16B16A16_SFLOAT: the fetch converts) over binding 1's range.
layout(binding = 4) uniform samplerBuffer w_texels;
vec4 weight4(uint i) { return texelFetch(w_texels, int(i)); }
#elif defined(WEIGHTS_TEXEL2)
// bf16 weights as R32G32_UINT texels (four values each).
layout(binding = 4) uniform usamplerBuffer w_texels;
vec4 weight4(uint i) {
  const uvec2 w = texelFetch(w_texels, int(i)).xy;
  return uintBitsToFloat(uvec4(w.x << 16u, w.x & 0xFFFF0000u, w.y << 16u, w.y & 0xFFFF0000u));
}
#elif defined(WEIGHTS_F16)
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
  const uint span = tile_span();  // outputs per logical group
  const uint out_groups = (pc.out_dim + span - 1u) / span;
  const uint groups = out_groups * ((pc.rows + ROWS - 1u) / ROWS);
  // Every A row and W row starts on a vec4 when all offsets and strides do.
  const bool vec = ((pc.in_dim | pc.w_offset) & 3u) == 0u && a_rows_vec_aligned();
  const uint share_lane = gl_SubgroupInvocationID % SHARE;
#ifdef HALF_MATH
  const uint chunks = 0u;  // fp16 values are not shuffled (no subgroup extended types assumed)
#else
  const uint chunks = SHARE > 1u ? pc.in_dim / (4u * SHARE) : 0u;  // of SHARE quads, one loaded per lane
#endif
  for (uint g = group_index(); g < groups; g += group_count()) {
    const uint o0 = (g % out_groups) * span + gl_LocalInvocationID.x;
    const uint row0 = (g / out_groups) * ROWS;
    uint w_row[OUTS];
    [[unroll]] for (uint j = 0u; j < OUTS; ++j) w_row[j] = pc.w_offset + tile_weight_row(o0, j) * pc.in_dim;
    uint a_row[ROWS];
    [[unroll]] for (uint r = 0u; r < ROWS; ++r) a_row[r] = ROW_WORD(a, min(row0 + r, pc.rows - 1u));
    float acc[ROWS * OUTS];
    [[unroll]] for (uint t = 0u; t < ROWS * OUTS; ++t) acc[t] = 0.0;
    float squares[ROWS];  // RMS_IN: each row's sum of squares
    [[unroll]] for (uint r = 0u; r < ROWS; ++r) squares[r] = 0.0;
    if (vec) {
      // Each weight quad is loaded once and applied to all ROWS rows, each
      // A quad (loaded by one lane of SHARE) to all OUTS outputs.
      for (uint c = 0u; c < chunks; ++c) {
        vec4 own[ROWS];
        [[unroll]] for (uint r = 0u; r < ROWS; ++r) own[r] = a_load4_aligned(a_row[r], 4u * (c * SHARE + share_lane));
        const vec4 own_gain = gain_quad(c * SHARE + share_lane);
        [[unroll]] for (uint q = 0u; q < SHARE; ++q) {
          vec4 w[OUTS];
          [[unroll]] for (uint j = 0u; j < OUTS; ++j) w[j] = weight4(w_row[j] / 4u + c * SHARE + q);
          const vec4 g = RMS_IN == 0u ? own_gain : shared_quad(own_gain, q);
          [[unroll]] for (uint r = 0u; r < ROWS; ++r) {
            const vec4 a = rms_in_quad(squares[r], shared_quad(own[r], q), g);
            [[unroll]] for (uint j = 0u; j < OUTS; ++j) ACC(r, j) = fma4(a, w[j], ACC(r, j));
          }
        }
      }
      // The quads past the last whole chunk, each lane loading its own.
      for (uint i = chunks * SHARE; i < pc.in_dim / 4u; ++i) {
#ifdef HALF_MATH
        f16vec4 w[OUTS];
        [[unroll]] for (uint j = 0u; j < OUTS; ++j) w[j] = w16x4[w_row[j] / 4u + i];
        [[unroll]] for (uint r = 0u; r < ROWS; ++r) {
          const f16vec4 a = a_half4_aligned(a_row[r], 4u * i);
          [[unroll]] for (uint j = 0u; j < OUTS; ++j) ACC(r, j) += group_product(a, w[j]);
        }
#else
        vec4 w[OUTS];
        [[unroll]] for (uint j = 0u; j < OUTS; ++j) w[j] = weight4(w_row[j] / 4u + i);
        const vec4 g = gain_quad(i);
        [[unroll]] for (uint r = 0u; r < ROWS; ++r) {
          const vec4 a = rms_in_quad(squares[r], a_load4_aligned(a_row[r], 4u * i), g);
          [[unroll]] for (uint j = 0u; j < OUTS; ++j) ACC(r, j) = fma4(a, w[j], ACC(r, j));
        }
#endif
      }
    } else {
#ifdef HALF_MATH
      for (uint i = 0u; i < pc.in_dim; i += 4u)
        [[unroll]] for (uint r = 0u; r < ROWS; ++r) {
          const f16vec4 a = a_group(a_row[r], i, pc.in_dim);
          [[unroll]] for (uint j = 0u; j < OUTS; ++j) ACC(r, j) += group_product(a, w_group(w_row[j], i, pc.in_dim));
        }
#else
      for (uint i = 0u; i < pc.in_dim; ++i) {
        float w[OUTS];
        [[unroll]] for (uint j = 0u; j < OUTS; ++j) w[j] = weight(w_row[j] + i);
        [[unroll]] for (uint r = 0u; r < ROWS; ++r) {
          const float a = rms_in_value(squares[r], a_load(a_row[r], i), i);
          [[unroll]] for (uint j = 0u; j < OUTS; ++j) ACC(r, j) = fma(a, w[j], ACC(r, j));
        }
      }
#endif
    }
    if (RMS_IN != 0u) {
      [[unroll]] for (uint r = 0u; r < ROWS; ++r) {
        const float inv = inverse_deviation(squares[r] / float(pc.in_dim) + pc.norm_eps);
        [[unroll]] for (uint j = 0u; j < OUTS; ++j) ACC(r, j) *= inv;
      }
    }
    [[unroll]] for (uint r = 0u; r < ROWS; ++r)
      if (row0 + r < pc.rows) { STORE_TILE_ROW(row0, o0, r) }
  }
}

#endif
