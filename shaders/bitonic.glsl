// Bitonic sort of TILE (key, tie, payload) triples in shared memory,
// ascending by (key, tie). TILE is a power of two; any workgroup size works.
// The including shader declares TILE and calls bitonic_sort() with every
// invocation of the workgroup.
#ifndef ATTENDRE_BITONIC_GLSL
#define ATTENDRE_BITONIC_GLSL

shared uint s_key[TILE];
shared uint s_tie[TILE];
shared uint s_payload[TILE];

bool goes_before(uint a, uint b) {
  return s_key[a] < s_key[b] || (s_key[a] == s_key[b] && s_tie[a] < s_tie[b]);
}

void bitonic_sort() {
  const uint W = gl_WorkGroupSize.x;
  barrier();  // the caller's loads are complete
  for (uint size = 2; size <= TILE; size <<= 1) {
    for (uint stride = size >> 1; stride > 0; stride >>= 1) {
      for (uint i = gl_LocalInvocationID.x; i < TILE; i += W) {
        const uint j = i ^ stride;
        if (j <= i) continue;
        const bool ascending = (i & size) == 0;
        if (goes_before(j, i) == ascending) {
          const uint k = s_key[i], t = s_tie[i], p = s_payload[i];
          s_key[i] = s_key[j]; s_tie[i] = s_tie[j]; s_payload[i] = s_payload[j];
          s_key[j] = k; s_tie[j] = t; s_payload[j] = p;
        }
      }
      barrier();  // one compare-exchange stage completes before the next
    }
  }
}

#endif
