#version 450
// Compaction plan of one insertion: which slot each surviving new row takes.
// Free slots are the never-used tail [held, M) followed by the slots of the
// evicted entries in victim order; surviving rows (valid, not evicted at
// insertion) take them in chunk order, by two prefix sums (one over the
// victims to list the freed slots, one over the rows to rank survivors).
// Its work is bounded by S (rows and victims <= kMaxChunk), not by M.
// SUBGROUP_ARITHMETIC builds the scans from subgroup prefix sums, SUBGROUP_BALLOT
// from bit-sliced subgroup ballots (scan.glsl).
//
// Bindings: 0 victim list (tile 0 of row 0: key, tie, payload) read
//           1 chunk (valid flags read, placement write)
// Spec constants: 0 workgroup size W (power of two), 1.. InsertConstants
// Dispatch: (1); rows and victims <= kMaxChunk
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "interface/insert.h"

layout(local_size_x_id = 0) in;

layout(std430, binding = 0) readonly buffer Lists { uint lists[]; };
layout(std430, binding = 1) buffer Chunk { uint chunk[]; };

shared uint s_freed[kMaxChunk];             // slots of evicted held entries, victim order
shared uint s_dropped[kMaxChunk / 32u];     // bit per chunk row evicted at insertion

#include "scan.glsl"

uint victim(uint i) { return lists[3u * i + 2u]; }

void main() {
  const uint tid = gl_LocalInvocationID.x, W = gl_WorkGroupSize.x;
  for (uint i = tid; i < kMaxChunk / 32u; i += W) s_dropped[i] = 0u;
  // Each invocation owns the contiguous blocks of victims and rows at its
  // place in scan order, so the scans keep victim and chunk order.
  const uint rank = scan_rank();
  barrier();  // bitmask cleared

  const uint vb = (pc.victims + W - 1u) / W;
  const uint v0 = min(rank * vb, pc.victims), v1 = min(v0 + vb, pc.victims);
  uint held_victims = 0u;
  for (uint i = v0; i < v1; ++i) held_victims += (victim(i) & kNewRow) == 0u ? 1u : 0u;
  uint freed_total;
  uint at = exclusive_scan(held_victims, freed_total);
  for (uint i = v0; i < v1; ++i) {
    const uint v = victim(i);
    if ((v & kNewRow) == 0u) s_freed[at++] = v;
    else atomicOr(s_dropped[(v & ~kNewRow) / 32u], 1u << ((v & ~kNewRow) % 32u));
  }
  barrier();  // freed list and dropped bits complete

  const uint rb = (sc_rows + W - 1u) / W;
  const uint r0 = min(rank * rb, sc_rows), r1 = min(r0 + rb, sc_rows);
  uint survivors = 0u;
  for (uint r = r0; r < r1; ++r) {
    const bool dropped = (s_dropped[r / 32u] & (1u << (r % 32u))) != 0u;
    survivors += (chunk[sc_chunk_valid_offset + r] != 0u && !dropped) ? 1u : 0u;
  }
  uint survivor_total;
  uint survivor_rank = exclusive_scan(survivors, survivor_total);
  const uint tail = sc_capacity - pc.held;  // never-used slots come first
  for (uint r = r0; r < r1; ++r) {
    const bool dropped = (s_dropped[r / 32u] & (1u << (r % 32u))) != 0u;
    uint slot = kInvalid;
    if (chunk[sc_chunk_valid_offset + r] != 0u && !dropped) {
      slot = survivor_rank < tail ? pc.held + survivor_rank : s_freed[survivor_rank - tail];
      ++survivor_rank;
    }
    chunk[sc_chunk_place_offset + r] = slot;
  }
}
