// The compaction plan of one insertion (insert_plan.comp, insert_direct.comp):
// which slot each surviving new row takes. Free slots are the never-used
// tail [held, M) followed by the slots of the evicted entries in victim
// order; surviving rows (valid, not evicted at insertion) take them in
// chunk order, by two prefix sums (one over the victims to list the freed
// slots, one over the rows to rank survivors). The includer defines
// PLAN_MAX (the most victims and rows, a multiple of 32) and, before this
// file, uint victim(uint i) (payload of victim i), bool row_valid(uint r)
// and void place(uint r, uint slot); sc_rows rows are placed.
#ifndef ATTENDRE_INSERT_PLAN_GLSL
#define ATTENDRE_INSERT_PLAN_GLSL

shared uint s_freed[PLAN_MAX];          // slots of evicted held entries, victim order
shared uint s_dropped[PLAN_MAX / 32u];  // bit per chunk row evicted at insertion

#include "scan.glsl"

// Places every chunk row (place(r, slot), kInvalid for rows that do not
// survive) given the E = `victims` victims, victim(i) in victim order, and
// the `held` entries before the insertion. Every invocation must call.
void plan_placement(uint victims, uint held) {
  const uint tid = gl_LocalInvocationID.x, W = gl_WorkGroupSize.x;
  for (uint i = tid; i < PLAN_MAX / 32u; i += W) s_dropped[i] = 0u;
  // Each invocation owns the contiguous blocks of victims and rows at its
  // place in scan order, so the scans keep victim and chunk order.
  const uint rank = scan_rank();
  barrier();  // bitmask cleared

  const uint vb = (victims + W - 1u) / W;
  const uint v0 = min(rank * vb, victims), v1 = min(v0 + vb, victims);
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
    survivors += (row_valid(r) && !dropped) ? 1u : 0u;
  }
  uint survivor_total;
  uint survivor_rank = exclusive_scan(survivors, survivor_total);
  const uint tail = sc_capacity - held;  // never-used slots come first
  for (uint r = r0; r < r1; ++r) {
    const bool dropped = (s_dropped[r / 32u] & (1u << (r % 32u))) != 0u;
    uint slot = kInvalid;
    if (row_valid(r) && !dropped) {
      slot = survivor_rank < tail ? held + survivor_rank : s_freed[survivor_rank - tail];
      ++survivor_rank;
    }
    place(r, slot);
  }
}

#endif
