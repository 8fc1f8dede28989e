#version 450
// Rotary position embedding, in place, on rows laid out [heads][head_dim]:
// pair i < rope_dims / 2 of every head turns by  angle = p * theta^(-2i / rope_dims)
// (p: the row's int32 position); dims >= rope_dims are left alone. Pairs are
// (2i, 2i+1) (GPT-J / llama.cpp "normal") or (i, i + rope_dims / 2) (NEOX).
//
// Precision: the angle is reduced modulo a full turn in double-float
// arithmetic (unevaluated sums hi + lo of two floats, ~47 bits): the
// frequency theta^(-2i/rope_dims) = ratio^i by binary powering of the host's
// ratio, then p * freq / (2 pi) with exact (Dekker) products, so only the
// fraction of a turn is ever rounded to fp32. The reduced angle is within
// ~1e-6 rad of exact up to |p| = 2^24, growing as |p| * ~1e-14 rad beyond
// (~2e-5 at 2^31), plus the device's sin/cos error on [-pi, pi] (Vulkan
// allows 2^-11 absolute; lavapipe and desktop GPUs reach ~1e-6). Measured on
// lavapipe against float64: <= 1.3e-6 relative per element for |p| <= 2^24,
// <= 2.1e-5 up to 2^31. A plain fp32 float(p) * inv_freq would be off by up
// to |angle| * 2^-24 (0.06 rad at p = 1e6) before sin/cos even start.
// `precise` keeps the compiler from fusing the error-free transformations
// into fma, which would break them.
//
// Bindings:  0 X rows (heads * head_dim floats each)   read/write
//            1 positions (int32, word 0 of each row)   read
// Spec constants: 0 workgroup size W
// Push constants: RopeParams (interface/rope.h)
// Dispatch: ceil(heads * rope_dims / 2 / W) * ceil(rows / kRopeRowsPerGroup)
//           logical groups, folded (kernels::fold_groups); pair columns vary
//           fastest. Each invocation owns one (head, pair) column and computes
//           its frequency once for kRopeRowsPerGroup rows.
#extension GL_GOOGLE_include_directive : require
#include "interface/rope.h"
#include "rows.glsl"

layout(local_size_x_id = 0) in;

layout(std430, binding = 0) buffer XRows { float x_rows[]; };
layout(std430, binding = 1) readonly buffer Positions { int positions[]; };

// Double-float helpers: a value is hi + lo with |lo| <= ulp(hi) / 2.
vec2 split(float a) {  // hi has 12 significant bits, lo the other 12
  precise float c = 4097.0 * a;
  precise float hi = c - (c - a);
  precise float lo = a - hi;
  return vec2(hi, lo);
}
vec2 two_prod(float a, float b) {  // a * b = hi + lo exactly (Dekker)
  precise float p = a * b;
  const vec2 x = split(a), y = split(b);
  precise float e = ((x.x * y.x - p) + x.x * y.y + x.y * y.x) + x.y * y.y;
  return vec2(p, e);
}
vec2 df_mul(vec2 a, vec2 b) {
  const vec2 p = two_prod(a.x, b.x);
  precise float e = p.y + (a.x * b.y + a.y * b.x);
  precise float s = p.x + e;
  precise float lo = e - (s - p.x);
  return vec2(s, lo);
}

// 1 / (2 pi) as a double-float: the nearest float (0x3E22F983), then the
// remainder (0x31DC9C88); both literals round to exactly those bits.
const vec2 kInvTwoPi = vec2(0.159154937, 6.42063824e-9);

// p * f turns (f double-float) reduced to [-0.5, 0.5].
float reduced_turns(int p, vec2 f) {
  const uint m = uint(abs(p));  // 2^31 for p = -2^31, still right
  // m = mh + ml, both exact floats (<= 19 and 12 significant bits).
  const float mh = float(m & 0xFFFFF000u), ml = float(m & 0xFFFu);
  const vec2 h = two_prod(mh, f.x), l = two_prod(ml, f.x);
  // fract of an exact float is exact; the rest is small.
  precise float t = (fract(h.x) + fract(l.x)) + ((h.y + l.y) + (mh * f.y + ml * f.y));
  if (p < 0) t = -t;
  return t - round(t);
}

void main() {
  const uint W = gl_WorkGroupSize.x, tid = gl_LocalInvocationID.x;
  const uint half_dims = pc.rope_dims / 2, columns = pc.heads * half_dims;
  const uint column_groups = (columns + W - 1) / W;
  const uint groups = column_groups * ((pc.rows + kRopeRowsPerGroup - 1) / kRopeRowsPerGroup);
  for (uint group = group_index(); group < groups; group += group_count()) {
    const uint column = (group % column_groups) * W + tid;
    if (column >= columns) continue;
    const uint head = column / half_dims, i = column % half_dims;
    const uint d0 = head * pc.head_dim + (pc.neox != 0u ? i : 2 * i);
    const uint d1 = d0 + (pc.neox != 0u ? half_dims : 1);

    // theta^(-2i / rope_dims) / (2 pi) = ratio^i / (2 pi), by binary powering.
    vec2 freq = vec2(1.0, 0.0), power = vec2(pc.ratio_hi, pc.ratio_lo);
    for (uint e = i; e != 0u; e >>= 1) {
      if ((e & 1u) != 0u) freq = df_mul(freq, power);
      power = df_mul(power, power);
    }
    freq = df_mul(freq, kInvTwoPi);

    const uint row0 = (group / column_groups) * kRopeRowsPerGroup;
    const uint row_end = min(row0 + kRopeRowsPerGroup, pc.rows);
    for (uint row = row0; row < row_end; ++row) {
      const float angle = 6.2831853 * reduced_turns(positions[ROW_WORD(pos, row)], freq);
      const float c = cos(angle), s = sin(angle);
      const uint base = ROW_WORD(x, row);
      const float x0 = x_rows[base + d0], x1 = x_rows[base + d1];
      x_rows[base + d0] = x0 * c - x1 * s;
      x_rows[base + d1] = x0 * s + x1 * c;
    }
  }
}
