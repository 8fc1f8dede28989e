#version 450
// Optional copy-out of the evicted entries, ascending by position (spec
// 2.1.4): a victim's output row is the number of victims with a smaller
// position. Runs before insert_scatter overwrites the freed slots. fp16
// memories (stored.glsl) copy out keys and values as stored, widened to fp32;
// a new row evicted at once is rounded as it would have been stored.
//
// Bindings: 0 victim list read, 1 K/V memory read, 2 chunk read,
//           3 evicted entries (keys, values, positions, scores) write
// Spec constants: 0 workgroup size W, 1.. InsertConstants (interface/insert.h)
// Dispatch: (ceil(kv_row / W), victims)
#extension GL_GOOGLE_include_directive : require
#include "stored.glsl"
#include "common.glsl"
#include "interface/insert.h"
#include "new_entry.glsl"

layout(local_size_x_id = 0) in;

layout(std430, binding = 0) readonly buffer Lists { uint lists[]; };
layout(std430, binding = 1) readonly buffer KvMemory { uint kv[]; };
STORED_VIEWS(1, kv)
layout(std430, binding = 2) readonly buffer Chunk { uint chunk[]; };
layout(std430, binding = 3) writeonly buffer Evicted { uint evicted[]; };

int position_of(uint v) {
  return (v & kNewRow) == 0u ? int(kv[sc_kv_pos_offset + v]) : int(chunk[sc_chunk_pos_offset + (v & ~kNewRow)]);
}

void main() {
  const uint e = gl_WorkGroupID.y;
  const uint v = lists[3u * e + 2u];
  const int position = position_of(v);
  uint rank = 0u;
  for (uint o = 0u; o < pc.victims; ++o) rank += position_of(lists[3u * o + 2u]) < position ? 1u : 0u;

  const bool is_new = (v & kNewRow) != 0u;
  const uint r = v & ~kNewRow;
  const uint i = gl_GlobalInvocationID.x;
  if (i < sc_kv_row) {
    // The key as the caller gave it: variant 0 of its row.
    const float key = is_new ? stored_round(uintBitsToFloat(chunk[sc_chunk_key_offset + r * sc_key_stride + i]))
                             : STORED_LOAD(kv, sc_kv_key_offset, v * sc_kv_key_stride + i);
    const float value = is_new ? stored_round(uintBitsToFloat(chunk[sc_chunk_value_offset + r * sc_kv_row + i]))
                               : STORED_LOAD(kv, sc_kv_value_offset, v * sc_kv_value_stride + i);
    evicted[sc_out_key_offset + rank * sc_kv_row + i] = floatBitsToUint(key);
    evicted[sc_out_value_offset + rank * sc_kv_row + i] = floatBitsToUint(value);
  }
  if (i == 0u) {
    evicted[sc_out_pos_offset + rank] = uint(position);
    evicted[sc_out_score_offset + rank] = is_new ? initial_score_bits(sc_policy, position, chunk[sc_chunk_init_offset])
                                                 : kv[sc_kv_score_offset + v];
  }
}
