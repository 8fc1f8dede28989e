#version 450
// C[r][o] = sum_i A[r][i] * W[o][i] (+ bias[o]) (+ R[r][o]) for a few rows
// (rows <= kMatvecMaxRows, e.g. decoding): a matrix-vector product. Each
// workgroup computes W / lanes outputs; the `lanes` invocations of one output
// split `in` (float types: reading consecutive weights; block types: one
// decode unit of a block each, its scales decoded once) and accumulate every
// row, then a shared-memory tree reduction adds their partial sums. Weight
// encodings as in matmul.comp (weights.glsl); math is fp32, except with
// -DHALF_MATH (fp16 A and W): each lane takes groups of four consecutive
// weights, their products in fp16 (half_math.glsl), sums in fp32.
//
// Bindings:  as matmul.comp (0 A read (input_rows.glsl), 1 W + bias read, 2 C read/write, 3 R read)
// Spec constants: 0 workgroup size W (a power of two)
// Push constants: MatmulParams (interface/matmul.h); lanes is a power of two <= W
// Dispatch: ceil(out / (W / lanes)) logical groups, folded (kernels::fold_groups)
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

layout(std430, binding = 2) buffer CRows { float c_rows[]; };
layout(std430, binding = 3) readonly buffer RRows { float r_rows[]; };

shared float partial[kMatvecMaxRows * gl_WorkGroupSize.x];  // [row][invocation]

void main() {
  const uint W = gl_WorkGroupSize.x;
  const uint tid = gl_LocalInvocationID.x;
  const uint lanes = pc.lanes, lane = tid % lanes;
  const uint per_group = W / lanes;
  const uint groups = (pc.out_dim + per_group - 1) / per_group;
  uint a_base[kMatvecMaxRows];
  for (uint row = 0; row < pc.rows; ++row) a_base[row] = ROW_WORD(a, row);

  for (uint group = group_index(); group < groups; group += group_count()) {
    const uint o = group * per_group + tid / lanes;
    float acc[kMatvecMaxRows];
    for (uint row = 0; row < kMatvecMaxRows; ++row) acc[row] = 0.0;
    if (o < pc.out_dim) {
#ifdef WEIGHTS_BLOCKS
      // Lane l decodes units l, l + lanes, ... of the row.
      const uint w_row = pc.w_offset + o * block_row_bytes(pc.in_dim);
      const uint units_per_block = QUANT_VALUES / QUANT_UNIT;
      for (uint u = lane; u < pc.in_dim / QUANT_UNIT; u += lanes) {
        const uint block = w_row + u / units_per_block * QUANT_BYTES;
        float v[QUANT_UNIT];
        quant_unit(quant_block(block), block, u % units_per_block, v);
        for (uint row = 0; row < pc.rows; ++row) {
          for (uint j = 0; j < QUANT_UNIT; ++j) acc[row] = fma(a_load(a_base[row], u * QUANT_UNIT + j), v[j], acc[row]);
        }
      }
#elif defined(HALF_MATH)
      const uint w_row = pc.w_offset + o * pc.in_dim;
      for (uint i = 4u * lane; i < pc.in_dim; i += 4u * lanes) {
        const f16vec4 w = w_group(w_row, i, pc.in_dim);
        for (uint row = 0; row < pc.rows; ++row) acc[row] += group_product(a_group(a_base[row], i, pc.in_dim), w);
      }
#else
      const uint w_row = pc.w_offset + o * pc.in_dim;
      for (uint i = lane; i < pc.in_dim; i += lanes) {
        const float w = weight(w_row + i);
        for (uint row = 0; row < pc.rows; ++row) acc[row] = fma(a_load(a_base[row], i), w, acc[row]);
      }
#endif
    }
    for (uint row = 0; row < pc.rows; ++row) partial[row * W + tid] = acc[row];
    barrier();  // partial sums complete before the reduction reads them
    // The lanes of one output are consecutive invocations: halve them.
    for (uint s = lanes / 2; s > 0; s /= 2) {
      if (lane < s)
        for (uint row = 0; row < pc.rows; ++row) partial[row * W + tid] += partial[row * W + tid + s];
      barrier();  // this level's sums written before the next level reads them
    }
    if (lane == 0 && o < pc.out_dim) {
      for (uint row = 0; row < pc.rows; ++row) {
        float v = partial[row * W + tid];
        if (pc.has_bias != 0u) v += weight_float(pc.bias_offset + o);
        if (pc.has_residual == kResidualSeparate) v += r_rows[ROW_WORD(r, row) + o];
        if (pc.has_residual == kResidualInC) v += c_rows[ROW_WORD(c, row) + o];
        c_rows[ROW_WORD(c, row) + o] = v;
      }
    }
    barrier();  // results read out of `partial` before the next group overwrites it
  }
}
