#version 450
// C[r][o] = sum_i A[r][i] * W[o][i] (+ bias[o]) (+ R[r][o]) for many rows: a
// shared-memory tiled GEMM. Each workgroup computes TILE_R x TILE_O outputs,
// stepping through `in` by TILE_K; each invocation accumulates a TM x TN
// micro-tile (rows tr + m * (TILE_R / TM), outputs to + n * (TILE_O / TN), so
// neighbouring invocations read neighbouring shared words and write
// neighbouring outputs). W is row-major [out][in] (PyTorch / GGUF) in any
// weight encoding (weights.glsl: -DWEIGHTS_F16, -DWEIGHTS_BF16,
// -DWEIGHTS_Q4_0 ...), decoded one value at a time as the W tile is loaded
// (neighbouring invocations share a block, so its scales come from cache);
// math is fp32, the bias is fp32 in every encoding. With -DHALF_MATH (fp16
// A and W, shaderFloat16) the tiles hold the fp16 values themselves (half
// the bytes) and each invocation takes its products in fp16 four `in`
// elements at a time, their sums accumulated in fp32 (half_math.glsl).
//
// Bindings:  0 A rows (in floats each; fp16 pairs in words with
//              -DINPUT_F16*, input_rows.glsl)                         read
//            1 W at w_offset (interface/matmul.h), bias at
//              bias_offset (words)                                    read
//            2 C rows (out floats each); they hold R when has_residual
//              is kResidualInC                                        read/write
//            3 R rows (out floats each) for kResidualSeparate; never
//              C (bound to A when unused)                             read
// Spec constants: 0 workgroup size W, 1 TILE_R, 2 TILE_O, 3 TILE_K, 4 TM,
//                 5 TN (TM, TN <= kMatmulMaxMicro; W = TILE_R/TM * TILE_O/TN)
// Push constants: MatmulParams (interface/matmul.h)
// Dispatch: ceil(out / TILE_O) * ceil(rows / TILE_R) tiles, folded into a
//           2-D grid (kernels::fold_groups); output tiles vary fastest.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : enable  // [[unroll]] in the block decoders
#if defined(WEIGHTS_F16) || defined(INPUT_F16)  // 16-bit loads of W or A
#extension GL_EXT_shader_16bit_storage : require
#endif
#ifdef WEIGHTS_INT8  // 8-bit loads of Q8_0 quants
#extension GL_EXT_shader_8bit_storage : require
#endif
#ifdef HALF_MATH  // fp16 products (half_math.glsl): shaderFloat16
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#endif
#include "interface/matmul.h"
#include "rows.glsl"
#include "weights.glsl"
#include "input_rows.glsl"
#ifdef HALF_MATH
#include "half_math.glsl"
#endif

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint TILE_R = 32;
layout(constant_id = 2) const uint TILE_O = 64;
layout(constant_id = 3) const uint TILE_K = 16;
layout(constant_id = 4) const uint TM = 4;
layout(constant_id = 5) const uint TN = 4;

layout(std430, binding = 2) buffer CRows { float c_rows[]; };
layout(std430, binding = 3) readonly buffer RRows { float r_rows[]; };

// Tiles stored k-major ([k][row], [k][output]), +1 pads away bank conflicts
// (sizes from interface/matmul.h, which the kernel plan budgets with; as
// halves with HALF_MATH, half the bytes the plan budgets).
#ifdef HALF_MATH
#define TILE_VALUE float16_t
#else
#define TILE_VALUE float
#endif
shared TILE_VALUE a_tile[ATT_MATMUL_A_TILE_WORDS(TILE_K, TILE_R)];
shared TILE_VALUE w_tile[ATT_MATMUL_W_TILE_WORDS(TILE_K, TILE_O)];
shared uint a_base[TILE_R];  // word of each row of the tile in A, or kInvalid past `rows`

const uint kInvalidRow = 0xFFFFFFFFu;

#ifdef HALF_MATH
// `in` steps kk..kk+3 of column `col` of the A tile (a) or W tile (!a),
// `pitch` apart; steps past TILE_K zero.
f16vec4 tile_group(uint kk, uint pitch, uint col, bool a) {
  f16vec4 g = f16vec4(kHalfZero);
  for (uint j = 0u; j < 4u && kk + j < TILE_K; ++j)
    g[j] = a ? a_tile[(kk + j) * pitch + col] : w_tile[(kk + j) * pitch + col];
  return g;
}
#endif

void main() {
  const uint W = gl_WorkGroupSize.x;
  const uint tid = gl_LocalInvocationID.x;
  const uint threads_o = TILE_O / TN, threads_r = TILE_R / TM;
  const uint to = tid % threads_o, tr = tid / threads_o;
  const uint out_tiles = (pc.out_dim + TILE_O - 1) / TILE_O;
  const uint tiles = out_tiles * ((pc.rows + TILE_R - 1) / TILE_R);

  for (uint tile = group_index(); tile < tiles; tile += group_count()) {
    const uint o0 = (tile % out_tiles) * TILE_O, row0 = (tile / out_tiles) * TILE_R;
    for (uint r = tid; r < TILE_R; r += W) a_base[r] = row0 + r < pc.rows ? ROW_WORD(a, row0 + r) : kInvalidRow;
    float acc[kMatmulMaxMicro * kMatmulMaxMicro];
    for (uint j = 0; j < TM * TN; ++j) acc[j] = 0.0;
    barrier();  // row bases complete before the tile loads use them

    for (uint k0 = 0; k0 < pc.in_dim; k0 += TILE_K) {
      // Consecutive invocations load consecutive `in` elements of a row.
      for (uint i = tid; i < TILE_R * TILE_K; i += W) {
        const uint r = i / TILE_K, kk = i % TILE_K, base = a_base[r];
#ifdef HALF_MATH
        a_tile[kk * (TILE_R + 1) + r] = base != kInvalidRow && k0 + kk < pc.in_dim ? a_half(base, k0 + kk) : kHalfZero;
#else
        a_tile[kk * (TILE_R + 1) + r] = base != kInvalidRow && k0 + kk < pc.in_dim ? a_load(base, k0 + kk) : 0.0;
#endif
      }
      for (uint i = tid; i < TILE_O * TILE_K; i += W) {
        const uint o = i / TILE_K, kk = i % TILE_K;
#ifdef HALF_MATH
        w_tile[kk * (TILE_O + 1) + o] = o0 + o < pc.out_dim && k0 + kk < pc.in_dim
                                            ? weight_half(pc.w_offset + (o0 + o) * pc.in_dim + k0 + kk)
                                            : kHalfZero;
#else
        w_tile[kk * (TILE_O + 1) + o] =
            o0 + o < pc.out_dim && k0 + kk < pc.in_dim ? weight_element(pc.w_offset, pc.in_dim, o0 + o, k0 + kk) : 0.0;
#endif
      }
      barrier();  // tiles complete before anyone reads them
#ifdef HALF_MATH
      // Groups of four `in` steps (the tile's zeros past `in`, and past
      // TILE_K when it is not a multiple of four, add nothing).
      for (uint kk = 0; kk < TILE_K; kk += 4u) {
        f16vec4 av[kMatmulMaxMicro], wv[kMatmulMaxMicro];
        for (uint m = 0; m < TM; ++m) av[m] = tile_group(kk, TILE_R + 1, tr + m * threads_r, true);
        for (uint n = 0; n < TN; ++n) wv[n] = tile_group(kk, TILE_O + 1, to + n * threads_o, false);
        for (uint m = 0; m < TM; ++m)
          for (uint n = 0; n < TN; ++n) acc[m * TN + n] += group_product(av[m], wv[n]);
      }
#else
      for (uint kk = 0; kk < TILE_K; ++kk) {
        float av[kMatmulMaxMicro], wv[kMatmulMaxMicro];
        for (uint m = 0; m < TM; ++m) av[m] = a_tile[kk * (TILE_R + 1) + tr + m * threads_r];
        for (uint n = 0; n < TN; ++n) wv[n] = w_tile[kk * (TILE_O + 1) + to + n * threads_o];
        for (uint m = 0; m < TM; ++m)
          for (uint n = 0; n < TN; ++n) acc[m * TN + n] = fma(av[m], wv[n], acc[m * TN + n]);
      }
#endif
      barrier();  // everyone done reading before the next tiles overwrite them
    }

    for (uint m = 0; m < TM; ++m) {
      const uint row = row0 + tr + m * threads_r;
      if (row >= pc.rows) break;
      const uint c_base = ROW_WORD(c, row);
      const uint r_base = pc.has_residual == kResidualSeparate ? ROW_WORD(r, row) : 0u;
      for (uint n = 0; n < TN; ++n) {
        const uint o = o0 + to + n * threads_o;
        if (o >= pc.out_dim) break;
        float v = acc[m * TN + n];
        if (pc.has_bias != 0u) v += weight_float(pc.bias_offset + o);
        if (pc.has_residual == kResidualSeparate) v += r_rows[r_base + o];
        if (pc.has_residual == kResidualInC) v += c_rows[c_base + o];
        c_rows[c_base + o] = v;
      }
    }
    // No barrier needed before the next tile rewrites a_base and the tiles:
    // every read of them happened before the k loop's last barrier.
  }
}
