// Workgroup-wide reductions of one value per invocation: every invocation
// calls, every invocation gets the result. Two builds of the including
// shader pick the implementation:
//   SUBGROUP_ARITHMETIC  subgroupAdd / subgroupMax within each subgroup,
//                        then one shared slot per subgroup, summed by every
//                        invocation in subgroup order (any subgroup size,
//                        full subgroups or not: only gl_SubgroupID and
//                        gl_NumSubgroups are read; a workgroup of one
//                        subgroup needs no shared slot and no barrier)
//   (else)               a shared-memory tree (the Vulkan 1.1 baseline)
// The workgroup size must be a power of two (the tree halves it).
#ifndef ATTENDRE_REDUCE_GLSL
#define ATTENDRE_REDUCE_GLSL

#ifdef SUBGROUP_ARITHMETIC
#extension GL_KHR_shader_subgroup_arithmetic : require
#endif

// One slot per invocation: a subgroup may hold a single invocation.
shared float s_reduce_float[gl_WorkGroupSize.x];
shared uint s_reduce_uint[gl_WorkGroupSize.x];

#ifdef SUBGROUP_ARITHMETIC
#define ATT_WORKGROUP_REDUCE(NAME, T, SLOTS, SUBGROUP_OP, COMBINE)                  \
  T NAME(T value) {                                                                 \
    value = SUBGROUP_OP(value);                                                     \
    if (gl_NumSubgroups == 1u) return value; /* uniform: no barrier needed */       \
    if (subgroupElect()) SLOTS[gl_SubgroupID] = value;                              \
    barrier(); /* every subgroup's partial is in place */                           \
    T result = SLOTS[0];                                                            \
    for (uint i = 1u; i < gl_NumSubgroups; ++i) result = COMBINE(result, SLOTS[i]); \
    barrier(); /* everyone read before a later call overwrites */                   \
    return result;                                                                  \
  }
#else
#define ATT_WORKGROUP_REDUCE(NAME, T, SLOTS, SUBGROUP_OP, COMBINE)                             \
  T NAME(T value) {                                                                            \
    const uint tid = gl_LocalInvocationID.x;                                                   \
    SLOTS[tid] = value;                                                                        \
    barrier(); /* every value is in place */                                                   \
    for (uint stride = gl_WorkGroupSize.x / 2u; stride > 0u; stride >>= 1) {                   \
      if (tid < stride) SLOTS[tid] = COMBINE(SLOTS[tid], SLOTS[tid + stride]);                 \
      barrier(); /* one level completes before the next reads it */                            \
    }                                                                                          \
    const T result = SLOTS[0];                                                                 \
    barrier(); /* everyone read before a later call overwrites */                              \
    return result;                                                                             \
  }
#endif

float reduce_add(float a, float b) { return a + b; }
uint reduce_add(uint a, uint b) { return a + b; }

ATT_WORKGROUP_REDUCE(workgroup_sum, float, s_reduce_float, subgroupAdd, reduce_add)
ATT_WORKGROUP_REDUCE(workgroup_max, float, s_reduce_float, subgroupMax, max)
ATT_WORKGROUP_REDUCE(workgroup_count, uint, s_reduce_uint, subgroupAdd, reduce_add)
ATT_WORKGROUP_REDUCE(workgroup_max_uint, uint, s_reduce_uint, subgroupMax, max)

#undef ATT_WORKGROUP_REDUCE
#endif
