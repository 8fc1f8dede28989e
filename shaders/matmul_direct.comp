#version 450
// C[r][o] = sum_i A[r][i] * W[o][i] (+ bias[o]) (+ R[r][o]) without shared
// memory or barriers, for CPU devices such as lavapipe (see
// DeviceCaps::KernelStyle): each invocation owns one output o and ROWS
// rows, and reads A and W rows straight from their buffers, four floats at
// a time when every row starts on a vec4 (scalar otherwise). Same result
// as matmul.comp and matvec.comp. -DWEIGHTS_F16: fp16 weights.
//
// Bindings:  as matmul.comp (0 A, 1 W + bias, 2 C, 3 R)
// Spec constants: 0 workgroup size W, 1 ROWS rows per invocation
// Push constants: MatmulParams (interface/matmul.h); lanes is unused
// Dispatch: ceil(out / W) * ceil(rows / ROWS) logical groups, folded
//           (kernels::fold_groups); output groups vary fastest.
#extension GL_GOOGLE_include_directive : require
#ifdef WEIGHTS_F16
#extension GL_EXT_shader_16bit_storage : require
#endif
#include "interface/matmul.h"
#include "rows.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint ROWS = 8;

layout(std430, binding = 0) readonly buffer ARows { float a_rows[]; };
layout(std430, binding = 0) readonly buffer ARows4 { vec4 a_rows4[]; };  // aliases ARows
layout(std430, binding = 1) readonly buffer Weights32 { float w32[]; };
#ifdef WEIGHTS_F16
layout(std430, binding = 1) readonly buffer Weights16 { float16_t w16[]; };  // aliases Weights32
layout(std430, binding = 1) readonly buffer Weights16x4 { f16vec4 w16x4[]; };
float weight(uint i) { return float(w16[i]); }
vec4 weight4(uint i) { return vec4(w16x4[i]); }  // i in units of 4 elements
#else
layout(std430, binding = 1) readonly buffer Weights32x4 { vec4 w32x4[]; };
float weight(uint i) { return w32[i]; }
vec4 weight4(uint i) { return w32x4[i]; }
#endif
layout(std430, binding = 2) buffer CRows { float c_rows[]; };
layout(std430, binding = 3) readonly buffer RRows { float r_rows[]; };

void main() {
  const uint W = gl_WorkGroupSize.x;
  const uint out_groups = (pc.out_dim + W - 1u) / W;
  const uint groups = out_groups * ((pc.rows + ROWS - 1u) / ROWS);
  // Every A row and W row starts on a vec4 when all offsets and strides do.
  const bool vec = ((pc.in_dim | pc.w_offset | pc.a_offset | pc.a_stride) & 3u) == 0u;
  for (uint g = group_index(); g < groups; g += group_count()) {
    const uint o = (g % out_groups) * W + gl_LocalInvocationID.x;
    if (o >= pc.out_dim) continue;
    const uint row0 = (g / out_groups) * ROWS;
    const uint w_row = pc.w_offset + o * pc.in_dim;
    const float bias = pc.has_bias != 0u ? w32[pc.bias_offset + o] : 0.0;
    for (uint r = row0; r < min(pc.rows, row0 + ROWS); ++r) {
      const uint a_row = ROW_WORD(a, r);
      float sum = 0.0;
      if (vec) {
        vec4 acc = vec4(0.0);
        for (uint i = 0u; i < pc.in_dim / 4u; ++i) acc = fma(a_rows4[a_row / 4u + i], weight4(w_row / 4u + i), acc);
        sum = (acc.x + acc.y) + (acc.z + acc.w);
      } else {
        for (uint i = 0u; i < pc.in_dim; ++i) sum = fma(a_rows[a_row + i], weight(w_row + i), sum);
      }
      sum += bias;
      if (pc.has_residual == kResidualSeparate) sum += r_rows[ROW_WORD(r, r) + o];
      if (pc.has_residual == kResidualInC) sum += c_rows[ROW_WORD(c, r) + o];
      c_rows[ROW_WORD(c, r) + o] = sum;
    }
  }
}
