// Workgroup-wide exclusive prefix sum of one uint per invocation
// (Hillis-Steele over shared memory). Every invocation must call it; the
// workgroup total is returned through `total`.
#ifndef ATTENDRE_SCAN_GLSL
#define ATTENDRE_SCAN_GLSL

shared uint s_scan[gl_WorkGroupSize.x];

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

#endif
