#version 450
// Merges the per-tile lists of one row into tile 0: the running best list
// plus as many further lists as fit in TILE are sorted together (bitonic)
// and the best `keep` survive, until every tile was consumed.
//
// Bindings: 0 lists [row][tile][keep] x (key, tie, payload)   read/write
// Spec constants: 0 workgroup size W, 1 TILE (power of two, >= 2 * keep)
// Dispatch: (1, rows)
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
  const uint row_base = row * pc.tiles * pc.keep * 3u;
  const uint per_round = TILE / pc.keep - 1u;  // lists added to the running best each round
  for (uint i = gl_LocalInvocationID.x; i < pc.keep; i += W) {
    s_key[i] = lists[row_base + 3u * i];
    s_tie[i] = lists[row_base + 3u * i + 1u];
    s_payload[i] = lists[row_base + 3u * i + 2u];
  }
  for (uint next = 1u; next < pc.tiles; next += per_round) {
    for (uint i = pc.keep + gl_LocalInvocationID.x; i < TILE; i += W) {
      const uint tile = next + (i / pc.keep) - 1u, slot = i % pc.keep;
      const uint at = row_base + (tile * pc.keep + slot) * 3u;
      const bool present = tile < pc.tiles;
      s_key[i] = present ? lists[at] : kInvalid;
      s_tie[i] = present ? lists[at + 1u] : kInvalid;
      s_payload[i] = present ? lists[at + 2u] : kInvalid;
    }
    bitonic_sort();
  }
  barrier();  // the final sort is complete before the write-back
  for (uint i = gl_LocalInvocationID.x; i < pc.keep; i += W) {
    lists[row_base + 3u * i] = s_key[i];
    lists[row_base + 3u * i + 1u] = s_tie[i];
    lists[row_base + 3u * i + 2u] = s_payload[i];
  }
}
