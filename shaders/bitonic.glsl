// Bitonic selection in shared memory of TILE (key, tie, payload) triples,
// ordered ascending by (key, tie): the `keep` smallest end up sorted in
// slots 0..keep-1. Rather than sorting the whole tile, runs of `keep` are
// sorted (alternately ascending and descending, so neighbours form bitonic
// sequences), then each round keeps the elementwise minimum of two
// neighbouring runs — the `keep` smallest of both, itself bitonic — and
// re-sorts it, halving the candidates until one run is left. TILE and keep
// are powers of two, keep <= TILE / 2; any workgroup size works. The
// including shader declares TILE and calls with every invocation.
#ifndef ATTENDRE_BITONIC_GLSL
#define ATTENDRE_BITONIC_GLSL

// kSelectWordsPerCandidate (interface/select_tile.h) words per candidate.
shared uint s_key[TILE];
shared uint s_tie[TILE];
shared uint s_payload[TILE];

bool goes_before(uint a, uint b) {
  return s_key[a] < s_key[b] || (s_key[a] == s_key[b] && s_tie[a] < s_tie[b]);
}

void swap_slots(uint a, uint b) {
  const uint k = s_key[a], t = s_tie[a], p = s_payload[a];
  s_key[a] = s_key[b]; s_tie[a] = s_tie[b]; s_payload[a] = s_payload[b];
  s_key[b] = k; s_tie[b] = t; s_payload[b] = p;
}

// Physical slot of logical element e once `round` halving rounds ran: the
// surviving runs stay where the first run of each pair was.
uint slot_of(uint e, uint keep, uint round) { return (e / keep) * (keep << round) + e % keep; }

// Sorts every run of `keep` logical elements (of `count`) that is bitonic;
// run r ends ascending when r is even, descending when odd.
void merge_runs(uint count, uint keep, uint round) {
  const uint W = gl_WorkGroupSize.x;
  for (uint stride = keep >> 1; stride > 0; stride >>= 1) {
    for (uint t = gl_LocalInvocationID.x; t < count / 2; t += W) {
      // Pair t: the element whose `stride` bit is clear, and its partner.
      const uint low = (t / stride) * 2 * stride + t % stride;
      const uint a = slot_of(low, keep, round), b = slot_of(low + stride, keep, round);
      const bool ascending = ((low / keep) & 1u) == 0u;
      if (goes_before(b, a) == ascending) swap_slots(a, b);
    }
    barrier();  // one compare-exchange stage completes before the next
  }
}

// presorted: the caller loaded sorted runs of `keep` alternating in
// direction (select_merge's lists), so the first phase is skipped.
void bitonic_top(uint keep, bool presorted) {
  const uint W = gl_WorkGroupSize.x;
  barrier();  // the caller's loads are complete
  if (!presorted) {
    for (uint size = 2; size <= keep; size <<= 1) {
      for (uint stride = size >> 1; stride > 0; stride >>= 1) {
        for (uint i = gl_LocalInvocationID.x; i < TILE; i += W) {
          const uint j = i ^ stride;
          if (j <= i) continue;
          const bool ascending = (i & size) == 0u;
          if (goes_before(j, i) == ascending) swap_slots(i, j);
        }
        barrier();  // one compare-exchange stage completes before the next
      }
    }
  }
  uint round = 0;
  for (uint count = TILE; count > keep; count >>= 1, ++round) {
    // The first run of each pair keeps the smaller of each position.
    for (uint t = gl_LocalInvocationID.x; t < count / 2; t += W) {
      const uint run = t / keep, e = 2u * run * keep + t % keep;
      const uint a = slot_of(e, keep, round), b = slot_of(e + keep, keep, round);
      if (goes_before(b, a)) {
        s_key[a] = s_key[b]; s_tie[a] = s_tie[b]; s_payload[a] = s_payload[b];
      }
    }
    barrier();  // the kept halves are complete before they are re-sorted
    merge_runs(count / 2, keep, round + 1);
  }
}

#endif
