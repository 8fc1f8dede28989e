// matmul.comp (tiled GEMM), matvec.comp (rows <= kMatvecMaxRows) and
// matmul_direct.comp (CPU devices): C[r][o] = sum_i A[r][i] * W[o][i]
// (+ bias[o]) (+ R[r][o]), W in any weight encoding (shaders/weights.glsl).
//
// w_offset, where W starts in the weight binding, counts units of the
// encoding's addressing: elements for F32, F16 and BF16 (W[o][i] is element
// w_offset + o * in_dim + i), bytes for the block types (row o starts at
// byte w_offset + o * (in_dim / block values) * block bytes; in_dim is a
// whole number of blocks and w_offset even, so every block starts at an even
// byte, interface/quant.h).
#ifndef ATTENDRE_INTERFACE_MATMUL_H
#define ATTENDRE_INTERFACE_MATMUL_H
#include "interface/params.h"
#include "interface/rows.h"

ATT_NAMESPACE_BEGIN
// Largest micro-tile side (rows or outputs) one GEMM invocation accumulates.
ATT_CONST(kMatmulMaxMicro, 4u)
// The matrix-vector path handles at most this many rows.
ATT_CONST(kMatvecMaxRows, 4u)
// matmul_direct.comp, block types: most invocations that share A loads by
// subgroup shuffles (the A quads of the smallest decode unit, interface/quant.h).
ATT_CONST(kMatmulDirectMaxShare, 8u)
// has_residual: where R comes from. In place, the C rows hold R before the
// product and are read then written by the same invocation, through one binding.
ATT_CONST(kResidualNone, 0u)
ATT_CONST(kResidualSeparate, 1u)  // R rows in binding 3
ATT_CONST(kResidualInC, 2u)       // R row r is C row r

// Shared memory of the GEMM (matmul.comp declares its arrays with these;
// the kernel plan sizes its tiles with them): the A and W tiles stored
// k-major with +1 padding against bank conflicts, and the tile's row bases.
#define ATT_MATMUL_A_TILE_WORDS(tile_k, tile_r) ((tile_k) * ((tile_r) + 1u))
#define ATT_MATMUL_W_TILE_WORDS(tile_k, tile_o) ((tile_k) * ((tile_o) + 1u))
#define ATT_MATMUL_SHARED_BYTES(tile_k, tile_r, tile_o) \
  (4u * (ATT_MATMUL_A_TILE_WORDS(tile_k, tile_r) + ATT_MATMUL_W_TILE_WORDS(tile_k, tile_o) + (tile_r)))

ATT_PARAMS_BEGIN(MatmulParams)
  ATT_U32(rows)
  ATT_U32(in_dim)
  ATT_U32(out_dim)
  ATT_U32(w_offset)     // elements (float types) or bytes (block types), above
  ATT_U32(bias_offset)  // words (fp32) in the weight binding
  ATT_U32(has_bias)
  ATT_U32(has_residual)  // kResidualNone, kResidualSeparate or kResidualInC
  ATT_U32(lanes)        // matvec: invocations per output (a power of two dividing the workgroup)
  ATT_ROWS(a)           // rows of in_dim floats, binding 0
  ATT_ROWS(c)           // rows of out_dim floats, binding 2
  ATT_ROWS(r)           // rows of out_dim floats, binding 3 (kResidualSeparate)
  ATT_U32(norm_offset)  // matmul_direct.comp's RMS_IN: word of binding 3 where the gains start (a multiple of 4)
  ATT_F32(norm_eps)     // and the epsilon of mean(A^2) + eps
  ATT_U32(split_first)   // matmul_direct.comp's SPLIT_OUTPUT: outputs from here go to binding 7
  ATT_U32(split_second)  // as rows c2 up to here, as rows c3 from here
  ATT_U32(c2_offset)     // words of binding 7: output split_first + j of row r at c2_offset + r * c2_stride + j
  ATT_U32(c2_stride)
  ATT_U32(c3_offset)     // and output split_second + j at c3_offset + r * c3_stride + j
  ATT_U32(c3_stride)
ATT_PARAMS_END(MatmulParams)
ATT_NAMESPACE_END

#endif
