#version 450
// Device memory bandwidth: dst = src, grid-stride so any number of
// workgroups covers any size. Elements are vec4 by default; COPY_SCALAR
// copies single floats instead (drivers that vectorize across invocations,
// such as lavapipe, load consecutive floats as one vector but vec4s as
// strided gathers). attendre-bench counts 2 * bytes (one read, one write)
// and keeps the best variant and size.
//
// Bindings:  0 src read, 1 dst write (ELEMENT[] each)
// Spec constants: 0 workgroup size W
// Push constants: BenchParams (interface/bench.h): count (elements)
// Dispatch: (groups) 1-D; invocation i copies i, i + groups * W, ...
#extension GL_GOOGLE_include_directive : require
#include "interface/bench.h"

#ifdef COPY_SCALAR
#define ELEMENT float
#else
#define ELEMENT vec4
#endif

layout(local_size_x_id = 0) in;

layout(std430, binding = 0) readonly buffer Src { ELEMENT src[]; };
layout(std430, binding = 1) writeonly buffer Dst { ELEMENT dst[]; };

void main() {
  const uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  for (uint i = gl_GlobalInvocationID.x; i < pc.count; i += stride) dst[i] = src[i];
}
