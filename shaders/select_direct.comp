#version 450
// Direct selection, for devices where barriers and per-invocation memory
// are dear (CPU devices such as lavapipe): one workgroup of W invocations
// selects the `keep` smallest (key, tie, payload) entries of one segment of
// one row and writes them sorted, in four steps with a barrier or two each:
//  1. Threshold: each invocation streams its share of the segment, keeping
//     its R best keys in registers (a branchless insertion, fully unrolled:
//     no private array indexed at run time, which lavapipe turns into
//     if-ladders). T = the worst of the invocations' q-th best keys
//     (q = ceil(keep / W) <= R) has at least W * q >= keep entries at or
//     below it, so every selected entry has key <= T; so has the keep-th
//     smallest of all W * R registers, found by bisection, which is tighter
//     (repeated keys would otherwise put many more entries under T).
//  2. Collect: the entries with key <= T (usually keep plus ties) are
//     appended to shared memory; logits' ties (positions) are read only for
//     them.
//  3. Overflow (exact ties, masked or empty rows: more than CAP entries at
//     or below T): the exact cutoff, the keep-th smallest (key, tie,
//     payload), is found by bisection over the key, then the tie, then the
//     payload, counting the segment anew per step; then collect again.
//  4. Rank: each collected entry counts the entries that sort before it
//     (E per invocation, held in registers: smaller keys, then, only where
//     keys repeat, smaller ties and payloads) and writes itself at its rank
//     if that is below keep; ranks are exact because payloads are unique.
// Built with SOURCE_LOGITS or SOURCE_EVICT like select_tile.comp, whose list
// layout it shares; select_merge_direct.comp folds the segments of a row.
// With SUBGROUP_ARITHMETIC the workgroup reductions run through subgroupMax
// and subgroupAdd (reduce.glsl), else through a shared-memory tree.
// The steps live in select_direct.glsl, which insert_direct.comp shares.
//
// Bindings: as select_tile.comp (select_fetch.glsl)
// Spec constants: 0 workgroup size W (a power of two), 1 CAP (collected
//   entries shared memory holds, >= keep)
// Dispatch: (tiles, rows), tile = segment of pc.segment candidates
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "interface/select_tile.h"

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint CAP = 1024;

#include "select_fetch.glsl"

// Entry `rank` of the segment's list ([row][tile][keep] triples).
void emit_selected(uint list_base, uint rank, uint key, uint tie, uint payload) {
  lists[list_base + 3u * rank] = key;
  lists[list_base + 3u * rank + 1u] = tie;
  lists[list_base + 3u * rank + 2u] = payload;
}

#include "select_direct.glsl"

void main() {
  const uint segment = gl_WorkGroupID.x, row = pc.row_offset + gl_WorkGroupID.y;
  select_segment(row, segment, ((row * pc.tiles) + segment) * pc.keep * 3u);
}
