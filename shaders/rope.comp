#version 450
// Rotary position embedding on rows laid out [heads][head_dim]: pair i <
// rope_dims / 2 of every head turns by the angle llama.cpp's CPU backend
// forms in float (core/positions.hpp, RopeAngles):
//   theta = float(p); theta *= theta_scale (i times); theta /= divisor_i;
//   angle = freq_scale * theta
// p the row's int32 position or a fixed one (LM-Infinite's rotations by
// +-n_local); dims >= rope_dims are copied as they are. Pairs are (2i, 2i+1)
// (GPT-J / llama.cpp "normal") or (i, i + rope_dims / 2) (NEOX).
// Rows are read at x and written at y, in place when they are the same.
//
// Precision: the products are IEEE float products (Vulkan rounds OpFMul
// correctly), so the chain gives llama.cpp's angle bit for bit; the division
// (Vulkan allows 2.5 ulp) is corrected by one exact residual step. That float
// angle, up to |p|, is then reduced to a fraction of a turn with an exact
// (Dekker) product by 1 / (2 pi) as a double-float, so sin/cos only see
// [-pi, pi] (where Vulkan allows 2^-11 absolute; lavapipe and desktop GPUs
// reach ~1e-6): within ~1e-7 rad of the float angle's own sin/cos up to 2^24,
// ~1e-5 rad at 2^31. `precise` keeps the compiler from fusing or reordering
// the float chain and the error-free transformations.
//
// Bindings:  0 X rows (heads * head_dim floats each)        read/write
//            1 positions (int32, word 0 of each row)        read
//            2 angle table (from table_offset: theta_scale,
//              freq_scale, one divisor per pair)            read
// Spec constants: 0 workgroup size W
// Push constants: RopeParams (interface/rope.h)
// Dispatch: ceil(heads * head_columns / W) * ceil(rows / kRopeRowsPerGroup)
//           logical groups, folded (kernels::fold_groups); columns vary
//           fastest. Each invocation owns one (head, column): a pair, whose
//           table words it reads once for kRopeRowsPerGroup rows, or (out of
//           place) two dims past rope_dims that it copies.
#extension GL_GOOGLE_include_directive : require
#include "interface/rope.h"
#include "rows.glsl"

layout(local_size_x_id = 0) in;

layout(std430, binding = 0) buffer XRows { float x_rows[]; };
layout(std430, binding = 1) readonly buffer Positions { int positions[]; };
layout(std430, binding = 2) readonly buffer Angles { float table[]; };

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

// 1 / (2 pi) as a double-float hi + lo (hi = float(1 / (2 pi))).
const float kInvTwoPiHi = 0.15915493667125702, kInvTwoPiLo = 6.4206382432985265e-09;

// llama.cpp's float angle of pair i at position p (see the top).
float llama_angle(int p, uint i, float theta_scale, float freq_scale, float divisor) {
  precise float theta = float(p);
  for (uint k = 0; k < i; ++k) theta = theta * theta_scale;
  if (divisor != 1.0) {
    precise float q = theta / divisor;
    const vec2 qd = two_prod(q, divisor);  // q * divisor exactly
    precise float residual = (theta - qd.x) - qd.y;
    q = q + residual / divisor;
    theta = q;
  }
  precise float angle = freq_scale * theta;
  return angle;
}

// angle / (2 pi) reduced to [-0.5, 0.5] turns.
float reduced_turns(float angle) {
  const vec2 h = two_prod(angle, kInvTwoPiHi);
  precise float whole = h.x - round(h.x);  // exact
  precise float t = whole + (h.y + angle * kInvTwoPiLo);
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
    const float theta_scale = table[pc.table_offset], freq_scale = table[pc.table_offset + 1];
    const float divisor = table[pc.table_offset + kRopeTableHeaderWords + i];
    for (uint row = row0; row < row_end; ++row) {
      const int p = pc.use_fixed != 0u ? pc.fixed_position : positions[ROW_WORD(pos, row)];
      const float angle = 6.2831853 * reduced_turns(llama_angle(p, i, theta_scale, freq_scale, divisor));
      const float c = cos(angle), s = sin(angle);
      const float x0 = x_rows[ROW_WORD(x, row) + d0], x1 = x_rows[ROW_WORD(x, row) + d1];
      x_rows[ROW_WORD(y, row) + d0] = x0 * c - x1 * s;
      x_rows[ROW_WORD(y, row) + d1] = x0 * s + x1 * c;
    }
  }
}
