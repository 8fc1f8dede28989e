// Workgroup-wide exclusive prefix sum of one uint per invocation, in scan
// order: scan_rank() is the invocation's place in that order (0..W-1), so a
// caller that hands out contiguous blocks by scan_rank() gets the blocks'
// prefix sums. Every invocation must call; the workgroup total is returned
// through `total`. Two builds of the including shader:
//   SUBGROUP_ARITHMETIC  subgroupExclusiveAdd within each subgroup, then the
//                        subgroup totals added in subgroup order; the order
//                        is subgroup by subgroup, lane by lane, and holds
//                        for any subgroup size and layout (the driver need
//                        not map local invocation ids to subgroups in order)
//   (else)               Hillis-Steele over shared memory; scan order is
//                        gl_LocalInvocationID.x
#ifndef ATTENDRE_SCAN_GLSL
#define ATTENDRE_SCAN_GLSL

#ifdef SUBGROUP_ARITHMETIC
#extension GL_KHR_shader_subgroup_arithmetic : require
#endif

shared uint s_scan[gl_WorkGroupSize.x];

#ifdef SUBGROUP_ARITHMETIC
uint exclusive_scan(uint value, out uint total) {
  const uint within = subgroupExclusiveAdd(value);
  const uint subgroup_total = subgroupAdd(value);
  if (subgroupElect()) s_scan[gl_SubgroupID] = subgroup_total;
  barrier();  // every subgroup's total is in place
  uint before = 0u;
  total = 0u;
  for (uint i = 0u; i < gl_NumSubgroups; ++i) {
    if (i == gl_SubgroupID) before = total;
    total += s_scan[i];
  }
  barrier();  // everyone read before a later call overwrites
  return before + within;
}

uint scan_rank() {
  uint invocations;
  return exclusive_scan(1u, invocations);
}
#else
uint exclusive_scan(uint value, out uint total) {
  const uint tid = gl_LocalInvocationID.x;
  s_scan[tid] = value;
  barrier();  // every value is in place
  for (uint offset = 1u; offset < gl_WorkGroupSize.x; offset <<= 1) {
    const uint add = tid >= offset ? s_scan[tid - offset] : 0u;
    barrier();  // all reads of this level happen before its writes
    s_scan[tid] += add;
    barrier();  // the level is complete
  }
  total = s_scan[gl_WorkGroupSize.x - 1u];
  const uint result = s_scan[tid] - value;
  barrier();  // everyone read before a later call overwrites
  return result;
}

uint scan_rank() { return gl_LocalInvocationID.x; }
#endif

#endif
