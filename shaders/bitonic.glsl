// Bitonic selection in shared memory of TILE (key, tie, payload) triples,
// ordered ascending by (key, tie): the `keep` smallest end up sorted in
// slots 0..keep-1. Rather than sorting the whole tile, runs of `keep` are
// sorted (alternately ascending and descending, so neighbours form bitonic
// sequences), then each round keeps the elementwise minimum of two
// neighbouring runs — the `keep` smallest of both, itself bitonic — and
// re-sorts it, halving the candidates until one run is left. TILE and keep
// are powers of two, keep <= TILE / 2; any workgroup size works. The
// including shader declares TILE and calls with every invocation.
//
// SUBGROUP_SHUFFLE: the stages whose partners are closer than the subgroup
// size (strides < gl_SubgroupSize: every stage of runs up to a subgroup,
// and the last log2(gl_SubgroupSize) stages of every longer one) run in
// registers, exchanged by subgroupShuffleXor, with one barrier per group of
// stages instead of one per stage. The same compare-exchange network, so
// the same result, bit for bit. Needs full subgroups (the pipeline requires
// them, VK_EXT_subgroup_size_control): element e of each W-element block is
// held by lane e of the subgroups laid end to end.
#ifndef ATTENDRE_BITONIC_GLSL
#define ATTENDRE_BITONIC_GLSL

#ifdef SUBGROUP_SHUFFLE
#extension GL_KHR_shader_subgroup_shuffle : require
#endif

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

#ifdef SUBGROUP_SHUFFLE
// The stages (size, stride) for size = size_lo, 2 size_lo, ..., size_hi and
// stride = min(size / 2, first_stride), ..., 1 (all < gl_SubgroupSize) over
// logical elements [0, count) at slot_of(e, keep, round). Elements sort
// ascending where (e & size) == 0, as in the shared-memory stages. Called
// with every invocation after a barrier.
void subgroup_stages(uint count, uint size_lo, uint size_hi, uint first_stride, uint keep, uint round) {
  const uint lane = gl_SubgroupID * gl_SubgroupSize + gl_SubgroupInvocationID;
  for (uint base = 0u; base < count; base += gl_WorkGroupSize.x) {
    const uint e = base + lane;
    const uint slot = slot_of(min(e, count - 1u), keep, round);  // lanes past count carry a copy, never stored
    uint key = s_key[slot], tie = s_tie[slot], payload = s_payload[slot];
    for (uint size = size_lo; size <= size_hi; size <<= 1) {
      const bool ascending = (e & size) == 0u;
      for (uint stride = min(size >> 1, first_stride); stride > 0u; stride >>= 1) {
        const uint other_key = subgroupShuffleXor(key, stride);
        const uint other_tie = subgroupShuffleXor(tie, stride);
        const uint other_payload = subgroupShuffleXor(payload, stride);
        // The lower element of the pair keeps the first in `ascending` order, the upper the other.
        const bool other_first = other_key < key || (other_key == key && other_tie < tie);
        const bool mine_first = key < other_key || (key == other_key && tie < other_tie);
        if (((e & stride) == 0u ? other_first : mine_first) == ascending) {
          key = other_key;
          tie = other_tie;
          payload = other_payload;
        }
      }
    }
    if (e < count) {
      s_key[slot] = key;
      s_tie[slot] = tie;
      s_payload[slot] = payload;
    }
  }
  barrier();  // the stages are complete before the next reads shared memory
}
#endif

// Sorts every run of `keep` logical elements (of `count`) that is bitonic;
// run r ends ascending when r is even, descending when odd.
void merge_runs(uint count, uint keep, uint round) {
  const uint W = gl_WorkGroupSize.x;
  for (uint stride = keep >> 1; stride > 0; stride >>= 1) {
#ifdef SUBGROUP_SHUFFLE
    if (stride < gl_SubgroupSize) {  // this stage and the rest, in registers
      subgroup_stages(count, keep, keep, stride, keep, round);
      break;
    }
#endif
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
    uint size = 2u;
#ifdef SUBGROUP_SHUFFLE
    // Runs up to a subgroup long sort entirely in registers, in one group of stages.
    const uint in_subgroup = min(keep, gl_SubgroupSize);
    if (in_subgroup >= 2u) subgroup_stages(TILE, 2u, in_subgroup, in_subgroup, TILE, 0u);
    size = max(2u, 2u * in_subgroup);
#endif
    for (; size <= keep; size <<= 1) {
      for (uint stride = size >> 1; stride > 0; stride >>= 1) {
#ifdef SUBGROUP_SHUFFLE
        if (stride < gl_SubgroupSize) {  // this stage and the rest of the size, in registers
          subgroup_stages(TILE, size, size, stride, TILE, 0u);
          break;
        }
#endif
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
