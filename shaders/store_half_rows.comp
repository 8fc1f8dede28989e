#version 450
// Stores fp32 rows (a chunk's queries, projected and rotated in fp32) into
// the rows of an fp16 ring that follow `first`, wrapping: each invocation
// writes one 32-bit word, two elements rounded as the reference rounds
// (stored.glsl); the pad element of an odd row is 0.
//
// Bindings:  0 source rows (row_floats floats each)          read
//            1 ring rows (stored_stride / 2 words each)      write
// Spec constants: 0 workgroup size W
// Push constants: StoreHalfParams (interface/store_half.h)
// Dispatch: (ceil(stored_stride / 2 / W), rows)
#extension GL_GOOGLE_include_directive : require
#define STORED_F16_WORDS
#include "stored.glsl"
#include "interface/store_half.h"

layout(local_size_x_id = 0) in;

layout(std430, binding = 0) readonly buffer Source { float source[]; };
layout(std430, binding = 1) writeonly buffer Ring { uint ring[]; };

float element(uint row, uint e) { return e < pc.row_floats ? source[row * pc.row_floats + e] : 0.0; }

void main() {
  const uint row = gl_WorkGroupID.y, w = gl_GlobalInvocationID.x, words = pc.stored_stride / 2u;
  if (w >= words) return;
  const uint ring_row = (pc.first + row) % pc.capacity;
  ring[ring_row * words + w] = half_pair(element(row, 2u * w), element(row, 2u * w + 1u));
}
