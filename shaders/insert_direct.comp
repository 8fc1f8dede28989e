#version 450
// One insertion with victims in one dispatch, for CPU devices (the direct
// kernels, DeviceCaps::KernelStyle::direct), where a dispatch costs more
// than a decode step's whole insertion: one workgroup selects the E victims
// as select_direct.comp does (select_direct.glsl; one segment: the held
// entries and the chunk's rows fit plan.direct_segment), places the
// surviving rows as insert_plan.comp does (insert_plan.glsl) and writes
// them as insert_scatter.comp does (insert_scatter.glsl), with a barrier
// between the steps. The victim list and the placement stay in shared
// memory; the result is the three kernels' (test_compaction.cpp).
// SUBGROUP_ARITHMETIC: the selection's reductions and the plan's scans by
// subgroup arithmetic, else shared-memory trees.
//
// Bindings: 0 K/V memory (the held entries read, the new ones written),
//           1 chunk read (rows, positions, valid flags, the initial score)
// Spec constants: 0 workgroup size W (a power of two), 1.. InsertConstants,
//                 28 CAP (collected entries shared memory holds, >= keep)
// Push constants: SelectTileParams, as the victim select's (tiles 1, keep
//                 = next_pow2(E)), with victims = E
// Dispatch: (1)
#extension GL_GOOGLE_include_directive : require
#include "stored.glsl"
#include "common.glsl"
#include "interface/select_tile.h"
#define INSERT_CONSTANTS_ONLY
#include "interface/insert.h"

layout(local_size_x_id = 0) in;
layout(constant_id = 28) const uint CAP = 1024;

#define SOURCE_EVICT
#define SELECT_WRITES_KV
#define SELECT_NO_LISTS
#include "select_fetch.glsl"

// The most victims and rows: the chunk's rows (E <= S), a multiple of 32.
#define PLAN_MAX (((sc_rows + 31u) / 32u) * 32u)

shared uint s_victim[PLAN_MAX];  // payloads of victims 0..E-1, victim order
shared uint s_slot[PLAN_MAX];    // the placement of each chunk row

// The selection hands over its list sorted; victims are its first E entries
// (it sorts keep = next_pow2(E)).
void emit_selected(uint list_base, uint rank, uint key, uint tie, uint payload) {
  if (rank < pc.victims) s_victim[rank] = payload;
}

#include "select_direct.glsl"

uint victim(uint i) { return s_victim[i]; }
bool row_valid(uint r) { return chunk[sc_chunk_valid_offset + r] != 0u; }
void place(uint r, uint slot) { s_slot[r] = slot; }

#include "insert_plan.glsl"
#include "insert_scatter.glsl"

void main() {
  select_segment(0u, 0u, 0u);
  barrier();  // the victims are listed (shared memory)
  plan_placement(pc.victims, pc.held);
  barrier();  // every row is placed; every read of the held entries is done
  const uint lane = gl_LocalInvocationID.x, W = gl_WorkGroupSize.x;
  for (uint r = 0u; r < sc_rows; ++r) {
    const uint slot = s_slot[r];
    if (slot == kInvalid) continue;
    for (uint i = lane; i < sc_key_stride; i += W) scatter_element(r, slot, i);
    if (lane == 0u) scatter_meta(r, slot);
  }
}
