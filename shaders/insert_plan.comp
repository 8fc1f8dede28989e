#version 450
// Compaction plan of one insertion: which slot each surviving new row takes
// (insert_plan.glsl), written into the chunk's placement words.
// Its work is bounded by S (rows and victims <= kMaxChunk), not by M.
// SUBGROUP_ARITHMETIC builds the scans from subgroup prefix sums, SUBGROUP_BALLOT
// from bit-sliced subgroup ballots (scan.glsl).
//
// Bindings: 0 victim list (tile 0 of row 0: key, tie, payload) read
//           1 chunk (valid flags read, placement write)
// Spec constants: 0 workgroup size W (power of two), 1.. InsertConstants
// Push constants: InsertParams (held, victims)
// Dispatch: (1); rows and victims <= kMaxChunk
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "interface/insert.h"

layout(local_size_x_id = 0) in;

layout(std430, binding = 0) readonly buffer Lists { uint lists[]; };
layout(std430, binding = 1) buffer Chunk { uint chunk[]; };

uint victim(uint i) { return lists[3u * i + 2u]; }
bool row_valid(uint r) { return chunk[sc_chunk_valid_offset + r] != 0u; }
void place(uint r, uint slot) { chunk[sc_chunk_place_offset + r] = slot; }

#define PLAN_MAX kMaxChunk
#include "insert_plan.glsl"

void main() { plan_placement(pc.victims, pc.held); }
