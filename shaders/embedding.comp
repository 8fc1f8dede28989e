#version 450
// Token embedding lookup: out[r] = scale * table[ids[r]], dim floats per row
// (scale 1, or Gemma's sqrt(hidden), applied in fp32 as llama.cpp does). A table
// larger than one storage range is split by rows into parts, one dispatch
// each: a part holds ids [first_id, first_id + vocab) and writes only their
// rows, except the part at first_id 0, which also writes zeros for every id
// outside it (padding rows carry id = vocab); the later parts overwrite their
// own rows after it (the recorder orders the writes). The table is in any
// weight encoding (weights.glsl: -DWEIGHTS_F16, -DWEIGHTS_BF16,
// -DWEIGHTS_Q4_0 ...), decoded one value per invocation; fp32 output.
//
// Bindings:  0 ids (uint32, word 0 of each row)                      read
//            1 table [vocab][dim] at table_offset (elements of the
//              float types, bytes of the block types)                read
//            2 out rows (dim floats each)                            write
// Spec constants: 0 workgroup size W
// Push constants: EmbeddingParams (interface/embedding.h)
// Dispatch: rows * ceil(dim / W) logical groups, folded (kernels::fold_groups)
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : enable  // [[unroll]] in the block decoders
#ifdef WEIGHTS_F16
#extension GL_EXT_shader_16bit_storage : require
#endif
#ifdef WEIGHTS_INT8  // 8-bit loads of Q8_0 quants
#extension GL_EXT_shader_8bit_storage : require
#endif
#include "interface/embedding.h"
#include "rows.glsl"
#include "weights.glsl"

layout(local_size_x_id = 0) in;

layout(std430, binding = 0) readonly buffer Ids { uint ids[]; };
layout(std430, binding = 2) writeonly buffer Output { float out_rows[]; };

void main() {
  const uint W = gl_WorkGroupSize.x;
  const uint blocks = (pc.dim + W - 1) / W;
  for (uint group = group_index(); group < pc.rows * blocks; group += group_count()) {
    const uint row = group / blocks, i = (group % blocks) * W + gl_LocalInvocationID.x;
    if (i >= pc.dim) continue;
    const uint local = ids[ROW_WORD(ids, row)] - pc.first_id;  // ids below first_id wrap past vocab
    if (local < pc.vocab) out_rows[ROW_WORD(out, row) + i] = pc.scale * weight_element(pc.table_offset, pc.dim, local, i);
    else if (pc.first_id == 0) out_rows[ROW_WORD(out, row) + i] = 0.0;
  }
}
