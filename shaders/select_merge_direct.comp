#version 450
// One pass of a binary merge tree over select_direct's per-segment lists:
// invocation (row, pair) merges the sorted lists `first` and `first + stride`
// (first = pair * 2 * stride) into list `first`, keeping the best `keep`
// by a linear merge. The host repeats passes (stride = 1, 2, 4, ...) until
// list 0 holds the row's answer; no barriers, 2 * keep steps per invocation.
//
// Bindings: 0 lists [row][tile][keep] x (key, tie, payload)   read/write
// Spec constants: 0 workgroup size W, 1 KEEP_MAX (power of two >= keep)
// Dispatch: ceil(rows * ceil(tiles / (2 * stride)) / W)
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "interface/select_merge.h"

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint KEEP_MAX = 64;

layout(std430, binding = 0) buffer Lists { uint lists[]; };

uint m_key[KEEP_MAX], m_tie[KEEP_MAX], m_payload[KEEP_MAX];

void main() {
  const uint pairs = (pc.tiles + 2u * pc.stride - 1u) / (2u * pc.stride);
  const uint id = gl_GlobalInvocationID.x;
  if (id >= pc.rows * pairs) return;
  const uint row = pc.row_offset + id / pairs, first = (id % pairs) * 2u * pc.stride;
  const uint second = first + pc.stride;
  if (second >= pc.tiles) return;  // an odd list out waits for a later pass
  const uint row_base = row * pc.tiles * pc.keep * 3u;
  const uint a_base = row_base + first * pc.keep * 3u, b_base = row_base + second * pc.keep * 3u;
  uint a = 0u, b = 0u;
  for (uint i = 0u; i < pc.keep; ++i) {
    const uint ak = lists[a_base + 3u * a], at = lists[a_base + 3u * a + 1u];
    const uint bk = lists[b_base + 3u * b], bt = lists[b_base + 3u * b + 1u];
    const bool take_a = ak < bk || (ak == bk && at <= bt);
    const uint from = take_a ? a_base + 3u * a : b_base + 3u * b;
    m_key[i] = lists[from];
    m_tie[i] = lists[from + 1u];
    m_payload[i] = lists[from + 2u];
    if (take_a) ++a; else ++b;
  }
  for (uint i = 0u; i < pc.keep; ++i) {
    lists[a_base + 3u * i] = m_key[i];
    lists[a_base + 3u * i + 1u] = m_tie[i];
    lists[a_base + 3u * i + 2u] = m_payload[i];
  }
}
