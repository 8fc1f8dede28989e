// Workgroup-wide exclusive prefix sum of one uint per invocation, in scan
// order: scan_rank() is the invocation's place in that order (0..W-1), so a
// caller that hands out contiguous blocks by scan_rank() gets the blocks'
// prefix sums. Every invocation must call; the workgroup total is returned
// through `total`. Three builds of the including shader:
//   SUBGROUP_ARITHMETIC  subgroupExclusiveAdd within each subgroup, then the
//                        subgroup totals added in subgroup order; the order
//                        is subgroup by subgroup, lane by lane, and holds
//                        for any subgroup size and layout (the driver need
//                        not map local invocation ids to subgroups in order)
//   SUBGROUP_BALLOT      the same order and combination, the sums within a
//                        subgroup bit-sliced: for each bit j of the values,
//                        the lanes below this one (and all lanes) whose
//                        value has bit j set, counted from a ballot, times
//                        2^j; for devices with ballot but no arithmetic
//                        (many phone GPUs). Any subgroup size up to 128
//                        (a ballot is a uvec4); lanes are ordered by
//                        gl_SubgroupInvocationID, as the ballot counts are.
//                        No partial sum exceeds the workgroup total, which
//                        the caller keeps below 2^32 (insert_plan's counts
//                        add up to at most kMaxChunk)
//   (else)               Hillis-Steele over shared memory; scan order is
//                        gl_LocalInvocationID.x
#ifndef ATTENDRE_SCAN_GLSL
#define ATTENDRE_SCAN_GLSL

#ifdef SUBGROUP_ARITHMETIC
#extension GL_KHR_shader_subgroup_arithmetic : require
#elif defined(SUBGROUP_BALLOT)
#extension GL_KHR_shader_subgroup_ballot : require
#endif

shared uint s_scan[gl_WorkGroupSize.x];

#if defined(SUBGROUP_ARITHMETIC) || defined(SUBGROUP_BALLOT)
#ifdef SUBGROUP_ARITHMETIC
// The exclusive prefix sum within the subgroup and the subgroup's total.
uint subgroup_exclusive_sum(uint value, out uint subgroup_total) {
  subgroup_total = subgroupAdd(value);
  return subgroupExclusiveAdd(value);
}
#else
// The exclusive prefix sum within the subgroup and the subgroup's total,
// one bit of the values at a time. The loop runs while some lane of the
// subgroup has bits at or above j: a ballot, the same in every lane, so
// every lane makes the same trips and every ballot sees the whole subgroup.
uint subgroup_exclusive_sum(uint value, out uint subgroup_total) {
  uint within = 0u;
  subgroup_total = 0u;
  for (uint j = 0u; j < 32u && subgroupBallot((value >> j) != 0u) != uvec4(0u); ++j) {
    const uvec4 set = subgroupBallot(((value >> j) & 1u) != 0u);
    within += subgroupBallotExclusiveBitCount(set) << j;
    subgroup_total += subgroupBallotBitCount(set) << j;
  }
  return within;
}
#endif

uint exclusive_scan(uint value, out uint total) {
  uint subgroup_total;
  const uint within = subgroup_exclusive_sum(value, subgroup_total);
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
