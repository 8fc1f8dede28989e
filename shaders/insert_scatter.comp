#version 450
// Scatter of the surviving new rows into their planned slots: key (every
// variant of it), value, position, tag and initial score
// (insert_scatter.glsl). The slots are insert_plan's placement; an
// insertion without victims (E = 0: the memory has room) is not planned,
// and its valid rows take the never-used slots held, held + 1, ... in chunk
// order, as insert_plan would place them, each workgroup counting the valid
// rows before its own (at most S flags).
//
// Bindings: 0 K/V memory write, 1 chunk read (placement, or valid flags when E = 0)
// Spec constants: 0 workgroup size W, 1.. InsertConstants (interface/insert.h)
// Push constants: InsertParams (held, victims)
// Dispatch: (ceil(key_stride / W), rows)
#extension GL_GOOGLE_include_directive : require
#include "stored.glsl"
#include "common.glsl"
#include "interface/insert.h"

layout(local_size_x_id = 0) in;

layout(std430, binding = 0) buffer KvMemory { uint kv[]; };
layout(std430, binding = 1) readonly buffer Chunk { uint chunk[]; };

#include "insert_scatter.glsl"

void main() {
  const uint r = gl_WorkGroupID.y;
  uint slot = kInvalid;
  if (pc.victims > 0u) {
    slot = chunk[sc_chunk_place_offset + r];
  } else if (chunk[sc_chunk_valid_offset + r] != 0u) {
    slot = pc.held;
    for (uint j = 0u; j < r; ++j) slot += chunk[sc_chunk_valid_offset + j] != 0u ? 1u : 0u;
  }
  if (slot == kInvalid) return;
  scatter_element(r, slot, gl_GlobalInvocationID.x);
  if (gl_GlobalInvocationID.x == 0u) scatter_meta(r, slot);
}
