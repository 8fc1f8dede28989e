#version 450
// Elementwise activation of rows: out = act(x) (plain) or
// out = act(gate) * up (gated, as in SwiGLU / GeGLU feed-forward layers);
// the functions are activation.glsl's (silu, gelu_tanh, relu).
// Each invocation reads and writes only element (row, i), so with -DIN_PLACE
// the out rows are rows of binding 0 (e.g. the gate rows themselves) and
// there is no binding 1. With -DOUTPUT_F16 (fp16 activations, not in place)
// the out rows hold fp16 pairs packed in words (half_bits.glsl) and each
// invocation computes elements 2i and 2i + 1 into word i, and GELU comes
// from ggml's fp16 table (activate() below).
//
// Bindings:  0 input rows: x, or gate and up (two row references)   read (IN_PLACE: read/write)
//            1 out rows (cols floats, or OUTPUT_F16
//              ceil(cols / 2) words, each)                           write
// Spec constants: 0 workgroup size W
// Push constants: ActivationParams (interface/activation.h)
// Dispatch: rows * ceil(cols / W) logical groups (OUTPUT_F16:
//           rows * ceil(ceil(cols / 2) / W)), folded (kernels::fold_groups)
#extension GL_GOOGLE_include_directive : require
#include "interface/activation.h"
#include "rows.glsl"
#include "activation.glsl"
#ifdef OUTPUT_F16
#include "half_bits.glsl"
#endif

layout(local_size_x_id = 0) in;

#if defined(IN_PLACE) && defined(OUTPUT_F16)
#error "fp16 rows are not activated in place"
#endif
#ifdef IN_PLACE
layout(std430, binding = 0) buffer Input { float input_rows[]; };
#define out_rows input_rows
#else
layout(std430, binding = 0) readonly buffer Input { float input_rows[]; };
#ifdef OUTPUT_F16
layout(std430, binding = 1) writeonly buffer Output { uint out_words[]; };
#else
layout(std430, binding = 1) writeonly buffer Output { float out_rows[]; };
#endif
#endif

float act(float x) { return activation_of(pc.kind, x); }

#ifdef OUTPUT_F16
// fp16 activations take GELU as llama.cpp's CPU backend does, from ggml's
// table of fp16 values: 0 for x <= -10, x for x >= 10, else gelu at the fp16
// rounding of x, rounded to fp16 (reference::ops::gelu_fp16_table).
float as_half(float x) { return unpackHalf2x16(half_bits(x)).x; }
float activate(float x) {
  if (pc.kind != kActGeluTanh) return act(x);
  if (x <= -10.0) return 0.0;
  if (x >= 10.0) return x;
  return as_half(act(as_half(x)));
}
#else
float activate(float x) { return act(x); }
#endif

// Element i of row `row`.
float activated(uint row, uint i) {
  float v = activate(input_rows[ROW_WORD(x, row) + i]);
  if (pc.gated != 0u) v *= input_rows[ROW_WORD(up, row) + i];
  return v;
}

void main() {
  const uint W = gl_WorkGroupSize.x;
#ifdef OUTPUT_F16
  const uint per_row = (pc.cols + 1u) / 2u;  // words of an out row
#else
  const uint per_row = pc.cols;
#endif
  const uint blocks = (per_row + W - 1) / W;
  for (uint group = group_index(); group < pc.rows * blocks; group += group_count()) {
    const uint row = group / blocks, i = (group % blocks) * W + gl_LocalInvocationID.x;
    if (i >= per_row) continue;
#ifdef OUTPUT_F16
    out_words[ROW_WORD(out, row) + i] = half_pair(activated(row, 2u * i), 2u * i + 1u < pc.cols ? activated(row, 2u * i + 1u) : 0.0);
#else
    out_rows[ROW_WORD(out, row) + i] = activated(row, i);
#endif
  }
}
