#version 450
// Normalizes each row of X into Y, one row per workgroup (or each of a row's
// `segments` consecutive pieces of dim floats, one piece per workgroup: the
// per-head q/k norms, whose weights g[dim] every head shares):
//   RMSNorm (default):  y = x / sqrt(mean(x^2) + eps) * g
//   LayerNorm (-DLAYER_NORM):  y = (x - mean) / sqrt(var + eps) * g + b,
//   population variance, computed in a second pass over (x - mean)^2 so that
//   rows with a large mean keep their precision.
// Each invocation reads and writes only its own elements (i = tid, tid + W,
// ...) after the reductions, so -DIN_PLACE normalizes X into itself (Y rows
// are then rows of binding 0, and there is no binding 2). With -DOUTPUT_F16
// (fp16 activations, not in place) Y rows hold fp16 pairs packed in words
// (half_bits.glsl): each invocation writes whole words, elements 2w, 2w + 1.
// A row whose statistic is not finite in fp32 is written as NaN (see
// inverse_deviation), never as the zeros 1/sqrt(inf) would give.
//
// Bindings:  0 X rows (dim floats each)              read (IN_PLACE: read/write)
//            1 weights: g at g_offset, b at b_offset  read
//            2 Y rows (dim floats, or OUTPUT_F16
//              ceil(dim / 2) words, each)             write
// Spec constants: 0 workgroup size W (a power of two)
// Push constants: NormParams (interface/norm.h)
// Dispatch: rows * segments logical groups, folded (kernels::fold_groups)
#extension GL_GOOGLE_include_directive : require
#include "interface/norm.h"
#include "rows.glsl"
#include "inverse_deviation.glsl"
#ifdef OUTPUT_F16
#include "half_bits.glsl"
#endif

layout(local_size_x_id = 0) in;

#if defined(IN_PLACE) && defined(OUTPUT_F16)
#error "fp16 rows are not normalized in place"
#endif
#ifdef IN_PLACE
layout(std430, binding = 0) buffer XRows { float x_rows[]; };
#define y_rows x_rows
#else
layout(std430, binding = 0) readonly buffer XRows { float x_rows[]; };
#ifdef OUTPUT_F16
layout(std430, binding = 2) writeonly buffer YRows { uint y_words[]; };
#else
layout(std430, binding = 2) writeonly buffer YRows { float y_rows[]; };
#endif
#endif
layout(std430, binding = 1) readonly buffer Weights { float weights[]; };

shared float partial[gl_WorkGroupSize.x];

// Sum of `v` over the workgroup, returned to every invocation.
float workgroup_sum(float v) {
  const uint W = gl_WorkGroupSize.x, tid = gl_LocalInvocationID.x;
  partial[tid] = v;
  barrier();  // every partial written before the tree reads them
  for (uint s = W / 2; s > 0; s /= 2) {
    if (tid < s) partial[tid] += partial[tid + s];
    barrier();  // this level's sums written before the next level reads them
  }
  const float total = partial[0];
  barrier();  // everyone has read the total before `partial` is reused
  return total;
}

void main() {
  const uint W = gl_WorkGroupSize.x, tid = gl_LocalInvocationID.x;
  const float n = float(pc.dim);
  for (uint piece = group_index(); piece < pc.rows * pc.segments; piece += group_count()) {
    // Segments are fp32 only (kernels::Norm refuses them with OUTPUT_F16).
    const uint row = piece / pc.segments, offset = (piece % pc.segments) * pc.dim;
    const uint xb = ROW_WORD(x, row) + offset, yb = ROW_WORD(y, row) + offset;
#ifdef LAYER_NORM
    float s = 0.0;
    for (uint i = tid; i < pc.dim; i += W) s += x_rows[xb + i];
    const float mean = workgroup_sum(s) / n;
    float q = 0.0;
    for (uint i = tid; i < pc.dim; i += W) {
      const float d = x_rows[xb + i] - mean;
      q = fma(d, d, q);
    }
    const float inv = inverse_deviation(workgroup_sum(q) / n + pc.eps);
#define NORMED(i) ((x_rows[xb + (i)] - mean) * inv * weights[pc.g_offset + (i)] + weights[pc.b_offset + (i)])
#else
    float q = 0.0;
    for (uint i = tid; i < pc.dim; i += W) q = fma(x_rows[xb + i], x_rows[xb + i], q);
    const float inv = inverse_deviation(workgroup_sum(q) / n + pc.eps);
#define NORMED(i) (x_rows[xb + (i)] * inv * weights[pc.g_offset + (i)])
#endif
#ifdef OUTPUT_F16
    for (uint w = tid; 2u * w < pc.dim; w += W)
      y_words[yb + w] = half_pair(NORMED(2u * w), 2u * w + 1u < pc.dim ? NORMED(2u * w + 1u) : 0.0);
#else
    for (uint i = tid; i < pc.dim; i += W) y_rows[yb + i] = NORMED(i);
#endif
#undef NORMED
  }
}
