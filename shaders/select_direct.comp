#version 450
// Direct selection, for devices where barriers are dear (CPU devices such
// as lavapipe): each invocation scans one segment of one row and keeps the
// `keep` smallest (key, tie) entries in a private max-heap (worst entry at
// the root), then heap-sorts them and writes the segment's sorted list.
// Built with SOURCE_LOGITS or SOURCE_EVICT like select_tile.comp, whose
// list layout it shares; select_merge_direct.comp folds the segments.
// Per invocation: segment * log2(keep) sift steps at most.
//
// Bindings: as select_tile.comp (select_fetch.glsl)
// Spec constants: 0 workgroup size W, 1 KEEP_MAX (power of two >= keep)
// Dispatch: ceil(rows * tiles / W), invocation = (row - row_offset) * tiles + segment
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "interface/select_tile.h"

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint KEEP_MAX = 64;

#include "select_fetch.glsl"

uint h_key[KEEP_MAX], h_tie[KEEP_MAX], h_payload[KEEP_MAX];

bool worse(uint a, uint b) {  // a sorts after b
  return h_key[a] > h_key[b] || (h_key[a] == h_key[b] && h_tie[a] > h_tie[b]);
}

void swap_entries(uint a, uint b) {
  const uint k = h_key[a], t = h_tie[a], p = h_payload[a];
  h_key[a] = h_key[b]; h_tie[a] = h_tie[b]; h_payload[a] = h_payload[b];
  h_key[b] = k; h_tie[b] = t; h_payload[b] = p;
}

// Restores the max-heap below `i` within the first n entries.
void sift_down(uint i, uint n) {
  while (true) {
    const uint l = 2u * i + 1u, r = l + 1u;
    uint top = i;
    if (l < n && worse(l, top)) top = l;
    if (r < n && worse(r, top)) top = r;
    if (top == i) return;
    swap_entries(i, top);
    i = top;
  }
}

void main() {
  const uint id = gl_GlobalInvocationID.x;
  if (id >= pc.rows * pc.tiles) return;
  const uint segment = id % pc.tiles, row = pc.row_offset + id / pc.tiles;
  const uint first = segment * pc.segment, last = min(first + pc.segment, pc.count);
  uint n = 0u;
  for (uint i = first; i < last; ++i) {
    uint key, tie, payload;
    fetch(row, i, key, tie, payload);
    if (payload == kInvalid) continue;  // not a candidate
    if (n < pc.keep) {
      // Grow the heap: sift the new entry up.
      uint at = n++;
      h_key[at] = key; h_tie[at] = tie; h_payload[at] = payload;
      while (at > 0u && worse(at, (at - 1u) / 2u)) {
        swap_entries(at, (at - 1u) / 2u);
        at = (at - 1u) / 2u;
      }
    } else if (key < h_key[0] || (key == h_key[0] && tie < h_tie[0])) {
      h_key[0] = key; h_tie[0] = tie; h_payload[0] = payload;
      sift_down(0u, n);
    }
  }
  for (uint end = n; end > 1u; --end) {  // heap sort: ascending in place
    swap_entries(0u, end - 1u);
    sift_down(0u, end - 1u);
  }
  const uint base = ((row * pc.tiles) + segment) * pc.keep * 3u;
  for (uint i = 0u; i < pc.keep; ++i) {
    lists[base + 3u * i] = i < n ? h_key[i] : kInvalid;
    lists[base + 3u * i + 1u] = i < n ? h_tie[i] : kInvalid;
    lists[base + 3u * i + 2u] = i < n ? h_payload[i] : kInvalid;
  }
}
