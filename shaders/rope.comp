#version 450
// Rotary position embedding on rows laid out [heads][head_dim]: pair i <
// rope_dims / 2 of every head turns by  angle = p * f_i, f_i the pair's
// angular frequency (theta^(-2i / rope_dims) under any RoPE scaling,
// core/positions.cpp), p the row's int32 position or a fixed one (LM-Infinite's
// rotations by +-n_local); dims >= rope_dims are copied as they are. Pairs are
// (2i, 2i+1) (GPT-J / llama.cpp "normal") or (i, i + rope_dims / 2) (NEOX).
// Rows are read at x and written at y, in place when they are the same.
//
// Precision: the host hands each pair's f_i / (2 pi) as a double-float (an
// unevaluated sum hi + lo of two floats, ~48 bits, from float64); p * f / (2
// pi) is formed with exact (Dekker) products, so only the fraction of a turn
// is ever rounded to fp32. The reduced angle is within ~1e-6 rad of exact up
// to |p| = 2^24, growing as |p| * ~1e-14 rad beyond (~2e-5 at 2^31), plus the
// device's sin/cos error on [-pi, pi] (Vulkan allows 2^-11 absolute; lavapipe
// and desktop GPUs reach ~1e-6). Measured on lavapipe against float64: <=
// 1.3e-6 relative per element for |p| <= 2^24, <= 2.1e-5 up to 2^31. A plain
// fp32 float(p) * inv_freq would be off by up to |angle| * 2^-24 (0.06 rad at
// p = 1e6) before sin/cos even start. `precise` keeps the compiler from
// fusing the error-free transformations into fma, which would break them.
//
// Bindings:  0 X rows (heads * head_dim floats each)        read/write
//            1 positions (int32, word 0 of each row)        read
//            2 frequency table (kRopeTableWordsPerPair
//              floats per pair, from table_offset)          read
// Spec constants: 0 workgroup size W
// Push constants: RopeParams (interface/rope.h)
// Dispatch: ceil(heads * head_columns / W) * ceil(rows / kRopeRowsPerGroup)
//           logical groups, folded (kernels::fold_groups); columns vary
//           fastest. Each invocation owns one (head, column): a pair, whose
//           frequency it reads once for kRopeRowsPerGroup rows, or (out of
//           place) two dims past rope_dims that it copies.
#extension GL_GOOGLE_include_directive : require
#include "interface/rope.h"
#include "rows.glsl"

layout(local_size_x_id = 0) in;

layout(std430, binding = 0) buffer XRows { float x_rows[]; };
layout(std430, binding = 1) readonly buffer Positions { int positions[]; };
layout(std430, binding = 2) readonly buffer Frequencies { float table[]; };

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
  const uint half_dims = pc.rope_dims / 2;
  const uint per_head = pc.head_columns;
  const uint columns = pc.heads * per_head;
  const uint column_groups = (columns + W - 1) / W;
  const uint groups = column_groups * ((pc.rows + kRopeRowsPerGroup - 1) / kRopeRowsPerGroup);
  for (uint group = group_index(); group < groups; group += group_count()) {
    const uint column = (group % column_groups) * W + tid;
    if (column >= columns) continue;
    const uint head = column / per_head, i = column % per_head;
    const uint row0 = (group / column_groups) * kRopeRowsPerGroup;
    const uint row_end = min(row0 + kRopeRowsPerGroup, pc.rows);
    if (i >= half_dims) {  // a plain copy of dims rope_dims + 2 (i - half_dims) and the next
      const uint d = head * pc.head_dim + pc.rope_dims + 2 * (i - half_dims);
      const uint n = min(2u, (head + 1) * pc.head_dim - d);
      for (uint row = row0; row < row_end; ++row)
        for (uint k = 0; k < n; ++k) x_rows[ROW_WORD(y, row) + d + k] = x_rows[ROW_WORD(x, row) + d + k];
      continue;
    }
    const uint d0 = head * pc.head_dim + (pc.neox != 0u ? i : 2 * i);
    const uint d1 = d0 + (pc.neox != 0u ? half_dims : 1);
    const uint f_word = pc.table_offset + kRopeTableWordsPerPair * i;
    const vec2 freq = vec2(table[f_word], table[f_word + 1]);
    for (uint row = row0; row < row_end; ++row) {
      const int p = pc.use_fixed != 0u ? pc.fixed_position : positions[ROW_WORD(pos, row)];
      const float angle = 6.2831853 * reduced_turns(p, freq);
      const float c = cos(angle), s = sin(angle);
      const float x0 = x_rows[ROW_WORD(x, row) + d0], x1 = x_rows[ROW_WORD(x, row) + d1];
      x_rows[ROW_WORD(y, row) + d0] = x0 * c - x1 * s;
      x_rows[ROW_WORD(y, row) + d1] = x0 * s + x1 * c;
    }
  }
}
