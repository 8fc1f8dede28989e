#version 450
// Device memory bandwidth: dst = src, one vec4 per element, grid-stride so
// any number of workgroups covers any size. attendre-bench counts
// 2 * count * 16 bytes (one read, one write) per dispatch.
//
// Bindings:  0 src vec4[] read, 1 dst vec4[] write
// Spec constants: 0 workgroup size W
// Push constants: BenchParams (interface/bench.h): count
// Dispatch: (groups) 1-D; invocation i copies i, i + groups * W, ...
#extension GL_GOOGLE_include_directive : require
#include "interface/bench.h"

layout(local_size_x_id = 0) in;

layout(std430, binding = 0) readonly buffer Src { vec4 src[]; };
layout(std430, binding = 1) writeonly buffer Dst { vec4 dst[]; };

void main() {
  const uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  for (uint i = gl_GlobalInvocationID.x; i < pc.count; i += stride) dst[i] = src[i];
}
