#version 450
#extension GL_KHR_shader_subgroup_shuffle : require
#extension GL_KHR_shader_subgroup_ballot : require
layout(local_size_x_id = 0) in;
layout(std430, binding = 0) readonly buffer Src { float src[]; };
layout(std430, binding = 0) readonly buffer Src4 { vec4 src4[]; };
layout(std430, binding = 1) writeonly buffer Dst { float dst[]; };
layout(push_constant) uniform PC { uint count; uint iterations; float multiplier; float addend; } pc;
void main() {
  const uint gid = gl_GlobalInvocationID.x;
  float acc = 0.0;
  vec4 acc4 = vec4(0.0);
#if MODE == 0   // per-lane distinct scalar: lane-strided rows
  const uint base = gid * pc.iterations;
  for (uint i = 0; i < pc.iterations; ++i) acc += src[base + i];
#elif MODE == 1 // uniform scalar: every lane the same address
  const uint base = gl_WorkGroupID.x * 64u;
  for (uint i = 0; i < pc.iterations; ++i) acc += src[base + i];
#elif MODE == 2 // per-lane vec4
  const uint base = gid * pc.iterations;
  for (uint i = 0; i < pc.iterations; ++i) acc4 += src4[base + i];
#elif MODE == 3 // uniform vec4
  const uint base = gl_WorkGroupID.x * 64u;
  for (uint i = 0; i < pc.iterations; ++i) acc4 += src4[base + i];
#elif MODE == 5 // subgroup: each lane loads a distinct quad, 8 shuffles share them (8 quads per iteration)
  const uint base = gl_WorkGroupID.x * 64u + gl_SubgroupInvocationID;
  for (uint i = 0; i < pc.iterations; i += 8u) {
    const vec4 q = src4[base + i];
    for (uint k = 0u; k < 8u; ++k) acc4 = fma(subgroupShuffle(q, k), vec4(pc.multiplier), acc4);
  }
#elif MODE == 6 // subgroup broadcast with literal ids
  const uint base = gl_WorkGroupID.x * 64u + gl_SubgroupInvocationID;
  for (uint i = 0; i < pc.iterations; i += 8u) {
    const vec4 q = src4[base + i];
    acc4 = fma(subgroupBroadcast(q, 0), vec4(pc.multiplier), acc4);
    acc4 = fma(subgroupBroadcast(q, 1), vec4(pc.multiplier), acc4);
    acc4 = fma(subgroupBroadcast(q, 2), vec4(pc.multiplier), acc4);
    acc4 = fma(subgroupBroadcast(q, 3), vec4(pc.multiplier), acc4);
    acc4 = fma(subgroupBroadcast(q, 4), vec4(pc.multiplier), acc4);
    acc4 = fma(subgroupBroadcast(q, 5), vec4(pc.multiplier), acc4);
    acc4 = fma(subgroupBroadcast(q, 6), vec4(pc.multiplier), acc4);
    acc4 = fma(subgroupBroadcast(q, 7), vec4(pc.multiplier), acc4);
  }
#elif MODE == 7 // uniform vec4 plus the same fma, for comparison with 5 and 6
  const uint base = gl_WorkGroupID.x * 64u;
  for (uint i = 0; i < pc.iterations; ++i) acc4 = fma(src4[base + i], vec4(pc.multiplier), acc4);
#elif MODE == 4 // ALU only: fma chain of 1 per iteration
  for (uint i = 0; i < pc.iterations; ++i) acc = fma(acc, pc.multiplier, float(i));
#endif
  dst[gid] = acc + acc4.x + acc4.y + acc4.z + acc4.w;
}
