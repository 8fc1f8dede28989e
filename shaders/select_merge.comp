#version 450
// One pass of a merge tree over the per-tile lists of a row: workgroup g
// folds the TILE / keep lists g*stride*F + j*stride (j < F = TILE / keep)
// into list g*stride*F, keeping the best `keep`. The lists are sorted
// already: odd ones are loaded reversed, which makes neighbours bitonic, and
// the halving rounds of bitonic_top do the rest. The host repeats passes (stride = 1, F, F^2, ...) until list 0
// holds the row's answer. Each invocation sorts once per pass, so its work
// stays bounded whatever the row length (some drivers, lavapipe among them,
// cut loops off after a fixed number of iterations per invocation).
//
// Bindings: 0 lists [row][tile][keep] x (key, tie, payload)   read/write
// Spec constants: 0 workgroup size W, 1 TILE (power of two, >= 2 * keep)
// Dispatch: (ceil(tiles / (stride * F)), rows)
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "interface/select_merge.h"

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint TILE = 1024;

layout(std430, binding = 0) buffer Lists { uint lists[]; };

#include "bitonic.glsl"

void main() {
  const uint W = gl_WorkGroupSize.x;
  const uint row = pc.row_offset + gl_WorkGroupID.y;
  const uint fan_in = TILE / pc.keep;
  const uint first = gl_WorkGroupID.x * pc.stride * fan_in;
  const uint row_base = row * pc.tiles * pc.keep * 3u;
  for (uint i = gl_LocalInvocationID.x; i < TILE; i += W) {
    const uint list = i / pc.keep, tile = first + list * pc.stride;
    const uint entry = (list & 1u) == 0u ? i % pc.keep : pc.keep - 1u - i % pc.keep;
    const uint at = row_base + (tile * pc.keep + entry) * 3u;
    const bool present = tile < pc.tiles;
    s_key[i] = present ? lists[at] : kInvalid;
    s_tie[i] = present ? lists[at + 1u] : kInvalid;
    s_payload[i] = present ? lists[at + 2u] : kInvalid;
  }
  bitonic_top(pc.keep, true);
  for (uint i = gl_LocalInvocationID.x; i < pc.keep; i += W) {
    const uint at = row_base + (first * pc.keep + i) * 3u;
    lists[at] = s_key[i];
    lists[at + 1u] = s_tie[i];
    lists[at + 2u] = s_payload[i];
  }
}
