#version 450
// Partial selection: each workgroup selects, in shared memory, the `keep`
// smallest (key, tie) entries of one tile of TILE candidates of one row
// (bitonic top-k, bitonic.glsl) and writes them sorted. Built twice:
//   SOURCE_LOGITS  top-K: key = larger logit first, tie = smaller position,
//                  payload = slot (masked slots carry the -inf key and sort last)
//   SOURCE_EVICT   victims: key = policy score (lowest first), tie = smaller
//                  position, payload = slot or kNewRow | chunk row; pinned
//                  entries, the recent window and protected new rows are
//                  not candidates
//
// Bindings (LOGITS): 0 logits read, 1 K/V memory read, 2 lists write
// Bindings (EVICT):  0 K/V memory read, 1 chunk read, 2 lists write
// Spec constants: 0 workgroup size W, 1 TILE (power of two)
// Dispatch: (tiles, rows)
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "interface/select_tile.h"

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint TILE = 1024;


#include "select_fetch.glsl"
#include "bitonic.glsl"

void main() {
  const uint W = gl_WorkGroupSize.x;
  const uint tile = gl_WorkGroupID.x;
  const uint row = pc.row_offset + gl_WorkGroupID.y;
  for (uint i = gl_LocalInvocationID.x; i < TILE; i += W) {
    const uint index = tile * TILE + i;
    uint key = kInvalid, tie = kInvalid, payload = kInvalid;
    if (index < pc.count) fetch(row, index, key, tie, payload);
    s_key[i] = key;
    s_tie[i] = tie;
    s_payload[i] = payload;
  }
  bitonic_top(pc.keep, false);
  const uint base = ((row * pc.tiles) + tile) * pc.keep * 3u;
  for (uint i = gl_LocalInvocationID.x; i < pc.keep; i += W) {
    lists[base + 3u * i] = s_key[i];
    lists[base + 3u * i + 1u] = s_tie[i];
    lists[base + 3u * i + 2u] = s_payload[i];
  }
}
