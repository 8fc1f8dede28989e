#version 450
// Scatter of the surviving new rows into their planned slots: key, value,
// position, tag and initial score.
//
// Bindings: 0 K/V memory write, 1 chunk read
// Spec constants: 0 workgroup size W
// Dispatch: (ceil(kv_row / W), rows)
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "interface/insert.h"
#include "new_entry.glsl"

layout(local_size_x_id = 0) in;

layout(std430, binding = 0) buffer KvMemory { uint kv[]; };
layout(std430, binding = 1) readonly buffer Chunk { uint chunk[]; };

void main() {
  const uint r = gl_WorkGroupID.y;
  const uint slot = chunk[pc.chunk_place_offset + r];
  if (slot == kInvalid) return;
  const uint i = gl_GlobalInvocationID.x;
  if (i < pc.kv_row) {
    kv[pc.kv_key_offset + slot * pc.kv_row + i] = chunk[pc.chunk_key_offset + r * pc.kv_row + i];
    kv[pc.kv_value_offset + slot * pc.kv_row + i] = chunk[pc.chunk_value_offset + r * pc.kv_row + i];
  }
  if (i == 0u) {
    const int position = int(chunk[pc.chunk_pos_offset + r]);
    kv[pc.kv_pos_offset + slot] = uint(position);
    kv[pc.kv_tag_offset + slot] = chunk[pc.chunk_tag_offset + r];
    kv[pc.kv_score_offset + slot] = initial_score_bits(pc.policy, position, chunk[pc.chunk_init_offset]);
  }
}
