#version 450
// Scatter of the surviving new rows into their planned slots: key (every
// variant of it), value, position, tag and initial score. The slots are
// insert_plan's placement; an insertion without victims (E = 0: the memory
// has room) is not planned, and its valid rows take the never-used slots
// held, held + 1, ... in chunk order, as insert_plan would place them, each
// workgroup counting the valid rows before its own (at most S flags).
// fp16 memories
// (STORED_F16_WORDS, stored.glsl): each invocation converts two fp32 chunk
// elements into one word of the slot's row, rounded as the reference rounds.
//
// Bindings: 0 K/V memory write, 1 chunk read (placement, or valid flags when E = 0)
// Spec constants: 0 workgroup size W, 1.. InsertConstants (interface/insert.h)
// Push constants: InsertParams (held, victims)
// Dispatch: (ceil(key_stride / W), rows)
#extension GL_GOOGLE_include_directive : require
#include "stored.glsl"
#include "common.glsl"
#include "interface/insert.h"
#include "new_entry.glsl"

layout(local_size_x_id = 0) in;

layout(std430, binding = 0) buffer KvMemory { uint kv[]; };
layout(std430, binding = 1) readonly buffer Chunk { uint chunk[]; };

#ifdef STORED_HALF
// Element e of a chunk row of `count` floats at word `row`; 0 past its end
// (the pad element of an odd row).
float chunk_element(uint row, uint count, uint e) {
  return e < count ? uintBitsToFloat(chunk[row + e]) : 0.0;
}
#endif

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
  const uint i = gl_GlobalInvocationID.x;
#ifdef STORED_HALF
  const uint key_row = sc_chunk_key_offset + r * sc_key_stride, value_row = sc_chunk_value_offset + r * sc_kv_row;
  if (i < sc_kv_key_stride / 2u)
    kv[sc_kv_key_offset + slot * (sc_kv_key_stride / 2u) + i] =
        half_pair(chunk_element(key_row, sc_key_stride, 2u * i), chunk_element(key_row, sc_key_stride, 2u * i + 1u));
  if (i < sc_kv_value_stride / 2u)
    kv[sc_kv_value_offset + slot * (sc_kv_value_stride / 2u) + i] =
        half_pair(chunk_element(value_row, sc_kv_row, 2u * i), chunk_element(value_row, sc_kv_row, 2u * i + 1u));
#else
  if (i < sc_key_stride) kv[sc_kv_key_offset + slot * sc_key_stride + i] = chunk[sc_chunk_key_offset + r * sc_key_stride + i];
  if (i < sc_kv_row) kv[sc_kv_value_offset + slot * sc_kv_row + i] = chunk[sc_chunk_value_offset + r * sc_kv_row + i];
#endif
  if (i == 0u) {
    const int position = int(chunk[sc_chunk_pos_offset + r]);
    kv[sc_kv_pos_offset + slot] = uint(position);
    kv[sc_kv_tag_offset + slot] = chunk[sc_chunk_tag_offset + r];
    kv[sc_kv_score_offset + slot] = initial_score_bits(sc_policy, position, chunk[sc_chunk_init_offset]);
  }
}
