#version 450
// Scatter of the surviving new rows into their planned slots: key (every
// variant of it), value, position, tag and initial score.
//
// Bindings: 0 K/V memory write, 1 chunk read
// Spec constants: 0 workgroup size W, 1.. InsertConstants (interface/insert.h)
// Dispatch: (ceil(key_stride / W), rows)
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "interface/insert.h"
#include "new_entry.glsl"

layout(local_size_x_id = 0) in;

layout(std430, binding = 0) buffer KvMemory { uint kv[]; };
layout(std430, binding = 1) readonly buffer Chunk { uint chunk[]; };

void main() {
  const uint r = gl_WorkGroupID.y;
  const uint slot = chunk[sc_chunk_place_offset + r];
  if (slot == kInvalid) return;
  const uint i = gl_GlobalInvocationID.x;
  if (i < sc_key_stride) kv[sc_kv_key_offset + slot * sc_key_stride + i] = chunk[sc_chunk_key_offset + r * sc_key_stride + i];
  if (i < sc_kv_row) kv[sc_kv_value_offset + slot * sc_kv_row + i] = chunk[sc_chunk_value_offset + r * sc_kv_row + i];
  if (i == 0u) {
    const int position = int(chunk[sc_chunk_pos_offset + r]);
    kv[sc_kv_pos_offset + slot] = uint(position);
    kv[sc_kv_tag_offset + slot] = chunk[sc_chunk_tag_offset + r];
    kv[sc_kv_score_offset + slot] = initial_score_bits(sc_policy, position, chunk[sc_chunk_init_offset]);
  }
}
