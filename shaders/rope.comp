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
// -DPAIR (rope_pair) also turns a second set of rows in place, with their
// own positions and head count, in the same dispatch: a block's keys with
// its queries (one dispatch instead of two; on a CPU device each costs a
// thread hand-off whatever it computes).
//
// Bindings:  0 X rows (heads * head_dim floats each)        read/write
//            1 positions (int32, word 0 of each row)        read
//            2 angle table (from table_offset: theta_scale,
//              freq_scale, one divisor per pair)            read
//            PAIR: 3 the second rows (heads_b * head_dim)
//              and their positions (one binding: the
//              chunk's keys and positions, so that the
//              kernel stays within 4 storage buffers)     read/write
// Spec constants: 0 workgroup size W
// Push constants: RopeParams (interface/rope.h)
// Dispatch: ceil(heads * head_columns / W) * ceil(rows / kRopeRowsPerGroup)
//           logical groups (PAIR: then as many again for heads_b * rope_dims
//           / 2 columns), folded (kernels::fold_groups); columns vary
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
#ifdef PAIR
layout(std430, binding = 3) buffer XRowsB { float x_rows_b[]; };  // rows and int32 positions
#endif

// Word i of the first (b false) or the second rows.
float x_load(bool b, uint i) {
#ifdef PAIR
  if (b) return x_rows_b[i];
#endif
  return x_rows[i];
}
void x_store(bool b, uint i, float v) {
#ifdef PAIR
  if (b) {
    x_rows_b[i] = v;
    return;
  }
#endif
  x_rows[i] = v;
}

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

// One logical group of a set of rows (b: the second): `heads` heads of
// `per_head` columns, read at x_row(r) and written at y_row(r).
#ifdef PAIR
#define X_ROW(row) (b ? ROW_WORD(x_b, row) : ROW_WORD(x, row))
#define Y_ROW(row) (b ? ROW_WORD(x_b, row) : ROW_WORD(y, row))
#define POSITION(row) (b ? floatBitsToInt(x_rows_b[ROW_WORD(pos_b, row)]) : positions[ROW_WORD(pos, row)])
#else
#define X_ROW(row) ROW_WORD(x, row)
#define Y_ROW(row) ROW_WORD(y, row)
#define POSITION(row) positions[ROW_WORD(pos, row)]
#endif
void rotate_group(bool b, uint group, uint heads, uint per_head) {
  const uint W = gl_WorkGroupSize.x, tid = gl_LocalInvocationID.x;
  const uint half_dims = pc.rope_dims / 2;
  const uint columns = heads * per_head;
  const uint column_groups = (columns + W - 1) / W;
  const uint column = (group % column_groups) * W + tid;
  if (column >= columns) return;
  const uint head = column / per_head, i = column % per_head;
  const uint row0 = (group / column_groups) * kRopeRowsPerGroup;
  const uint row_end = min(row0 + kRopeRowsPerGroup, pc.rows);
  if (i >= half_dims) {  // a plain copy of dims rope_dims + 2 (i - half_dims) and the next
    const uint d = head * pc.head_dim + pc.rope_dims + 2 * (i - half_dims);
    const uint n = min(2u, (head + 1) * pc.head_dim - d);
    for (uint row = row0; row < row_end; ++row)
      for (uint k = 0; k < n; ++k) x_store(b, Y_ROW(row) + d + k, x_load(b, X_ROW(row) + d + k));
    return;
  }
  const uint d0 = head * pc.head_dim + (pc.neox != 0u ? i : 2 * i);
  const uint d1 = d0 + (pc.neox != 0u ? half_dims : 1);
  const float theta_scale = table[pc.table_offset], freq_scale = table[pc.table_offset + 1];
  const float divisor = table[pc.table_offset + kRopeTableHeaderWords + i];
  for (uint row = row0; row < row_end; ++row) {
    const int p = pc.use_fixed != 0u ? pc.fixed_position : POSITION(row);
    const float angle = 6.2831853 * reduced_turns(llama_angle(p, i, theta_scale, freq_scale, divisor));
    const float c = cos(angle), s = sin(angle);
    const float x0 = x_load(b, X_ROW(row) + d0), x1 = x_load(b, X_ROW(row) + d1);
    x_store(b, Y_ROW(row) + d0, x0 * c - x1 * s);
    x_store(b, Y_ROW(row) + d1, x0 * s + x1 * c);
  }
}

void main() {
  const uint W = gl_WorkGroupSize.x;
  const uint row_groups = (pc.rows + kRopeRowsPerGroup - 1) / kRopeRowsPerGroup;
  const uint groups_a = (pc.heads * pc.head_columns + W - 1) / W * row_groups;
#ifdef PAIR
  const uint per_head_b = pc.rope_dims / 2;  // in place: no copied columns
  const uint groups = groups_a + (pc.heads_b * per_head_b + W - 1) / W * row_groups;
#else
  const uint groups = groups_a;
#endif
  for (uint group = group_index(); group < groups; group += group_count()) {
#ifdef PAIR
    if (group >= groups_a) {
      rotate_group(true, group - groups_a, pc.heads_b, per_head_b);
      continue;
    }
#endif
    rotate_group(false, group, pc.heads, pc.head_columns);
  }
}
