// The direct selection of one segment of one row (select_direct.comp,
// insert_direct.comp): the `keep` smallest (key, tie, payload) entries,
// found in four steps with a barrier or two each; the header of
// select_direct.comp describes them. The includer declares CAP (collected
// entries shared memory holds, >= keep) and includes select_fetch.glsl
// (the candidates) and defines, before this file,
//   void emit_selected(uint list_base, uint rank, uint key, uint tie, uint payload)
// which receives entry `rank` of the sorted list.
#ifndef ATTENDRE_SELECT_DIRECT_GLSL
#define ATTENDRE_SELECT_DIRECT_GLSL

#include "reduce.glsl"

const uint R = kDirectSelectBestKeys;   // best keys per invocation in step 1
const uint E = kDirectSelectRankBlock;  // collected entries one invocation ranks at a time in step 4

shared uint s_key[CAP], s_tie[CAP], s_payload[CAP];
shared uint s_count;

// (a_key, a_tie, a_payload) sorts before (b_key, b_tie, b_payload).
bool before(uint ak, uint at, uint ap, uint bk, uint bt, uint bp) {
  return ak < bk || (ak == bk && (at < bt || (at == bt && ap < bp)));
}

// Candidate `index` as (key, tie, payload); payload kInvalid: not a candidate.
void candidate(uint row, uint index, out uint key, out uint tie, out uint payload) {
  fetch(row, index, key, tie, payload);
}

// The key alone (kInvalid for a non-candidate): logits skip the position.
// logit_base: the row's first logit word (pc read outside the loops).
uint candidate_key(uint row, uint index, uint logit_base) {
#ifdef SOURCE_LOGITS
  return logit_key_at(logit_base + index);
#else
  uint key, tie, payload;
  fetch(row, index, key, tie, payload);
  return payload == kInvalid ? kInvalid : key;
#endif
}

void append(uint key, uint tie, uint payload) {
  const uint n = atomicAdd(s_count, 1u);
  if (n < CAP) {
    s_key[n] = key;
    s_tie[n] = tie;
    s_payload[n] = payload;
  }
}

// Step 3: the segment's candidates at or below (key, tie, payload), summed over the workgroup.
uint count_at_or_below(uint row, uint first, uint last, uint ck, uint ct, uint cp) {
  uint n = 0u;
  for (uint i = first + gl_LocalInvocationID.x; i < last; i += gl_WorkGroupSize.x) {
    uint key, tie, payload;
    candidate(row, i, key, tie, payload);
    if (payload != kInvalid && !before(ck, ct, cp, key, tie, payload)) ++n;
  }
  return workgroup_count(n);
}

// Selects the `keep` smallest entries of segment `segment` of row `row`
// and hands each to emit_selected(list_base, rank, key, tie, payload), rank
// < keep ascending, the ranks past the candidates with kInvalid entries.
// Every invocation of the workgroup must call.
void select_segment(uint row, uint segment, uint list_base) {
  const uint W = gl_WorkGroupSize.x, lane = gl_LocalInvocationID.x;
  const uint first = segment * pc.segment, last = min(first + pc.segment, pc.count);
  const uint keep = pc.keep, logit_base = pc.source_offset + row * pc.source_stride, tie_base = pc.kv_pos_offset;
  if (lane == 0u) s_count = 0u;  // the reduction's barriers publish it

  // 1. Threshold: this invocation's R best keys, ascending.
  uint best[R];
  for (uint j = 0u; j < R; ++j) best[j] = kInvalid;
  for (uint i = first + lane; i < last; i += W) {
    uint x = candidate_key(row, i, logit_base);
    for (uint j = 0u; j < R; ++j) {
      const uint lo = min(best[j], x);
      x = max(best[j], x);
      best[j] = lo;
    }
  }
  const uint q = (keep + W - 1u) / W;
  uint mine = kInvalid;  // q > R (a workgroup too small for keep): everything is a candidate
  for (uint j = 0u; j < R; ++j)
    if (j + 1u == q) mine = best[j];
  uint threshold = workgroup_max_uint(mine);
  // Tighter, where repeated keys would leave many at the bound above: the
  // keep-th smallest of all invocations' R best keys also has keep entries
  // at or below it, by bisection over those W * R keys (registers only).
  if (q <= R) {
    uint lo = 0u, hi = threshold;
    while (lo < hi) {
      const uint mid = lo + (hi - lo) / 2u;
      uint n = 0u;
      for (uint j = 0u; j < R; ++j) n += best[j] <= mid ? 1u : 0u;
      if (workgroup_count(n) >= keep) hi = mid;
      else lo = mid + 1u;
    }
    threshold = lo;
  }

  // 2. Collect the entries at or below the threshold.
  for (uint i = first + lane; i < last; i += W) {
#ifdef SOURCE_LOGITS
    const uint key = logit_key_at(logit_base + i);
    if (key <= threshold) append(key, logit_tie_at(tie_base + i), i);
#else
    uint key, tie, payload;
    candidate(row, i, key, tie, payload);
    if (payload != kInvalid && key <= threshold) append(key, tie, payload);
#endif
  }
  barrier();
  uint collected = s_count;

  // 3. Overflow: bisect for the keep-th smallest (key, tie, payload). More
  // than CAP >= keep entries have key <= threshold, so the searches start
  // from a bound that holds at least keep.
  if (collected > CAP) {
    uint ck = threshold, ct = kInvalid, cp = kInvalid;
    for (uint level = 0u; level < 3u; ++level) {
      uint lo = 0u, hi = level == 0u ? threshold : kInvalid;
      while (lo < hi) {
        const uint mid = lo + (hi - lo) / 2u;
        const uint n = level == 0u ? count_at_or_below(row, first, last, mid, kInvalid, kInvalid)
                       : level == 1u ? count_at_or_below(row, first, last, ck, mid, kInvalid)
                                     : count_at_or_below(row, first, last, ck, ct, mid);
        if (n >= keep) hi = mid;
        else lo = mid + 1u;
      }
      if (level == 0u) ck = lo;
      else if (level == 1u) ct = lo;
      else cp = lo;
      // Unique payloads: after the last level exactly keep entries remain.
      if (level == 2u || count_at_or_below(row, first, last, ck, ct, cp) <= CAP) break;
    }
    if (lane == 0u) s_count = 0u;
    barrier();
    for (uint i = first + lane; i < last; i += W) {
      uint key, tie, payload;
      candidate(row, i, key, tie, payload);
      if (payload != kInvalid && !before(ck, ct, cp, key, tie, payload)) append(key, tie, payload);
    }
    barrier();
    collected = s_count;
  }

  // 4. Rank the collected entries; each one below keep writes itself. The
  // ranks count smaller keys (one shared load per step); only invocations
  // holding an entry whose key another entry shares compare ties and
  // payloads too.
  for (uint block = 0u; block < collected; block += W * E) {
    uint k[E], t[E], p[E], rank[E], same[E];
    for (uint e = 0u; e < E; ++e) {
      const uint j = min(block + e * W + lane, collected - 1u);
      k[e] = s_key[j];
      t[e] = s_tie[j];
      p[e] = s_payload[j];
      rank[e] = 0u;
      same[e] = 0u;
    }
    for (uint i = 0u; i < collected; ++i) {
      const uint ik = s_key[i];
      for (uint e = 0u; e < E; ++e) {
        rank[e] += ik < k[e] ? 1u : 0u;
        same[e] += ik == k[e] ? 1u : 0u;
      }
    }
    bool shared_key = false;  // some entry here meets another with its key (itself counts once)
    for (uint e = 0u; e < E; ++e) shared_key = shared_key || (block + e * W + lane < collected && same[e] > 1u);
    if (shared_key) {
      for (uint i = 0u; i < collected; ++i) {
        const uint ik = s_key[i], it = s_tie[i], ip = s_payload[i];
        for (uint e = 0u; e < E; ++e) rank[e] += ik == k[e] && (it < t[e] || (it == t[e] && ip < p[e])) ? 1u : 0u;
      }
    }
    for (uint e = 0u; e < E; ++e) {
      if (block + e * W + lane < collected && rank[e] < keep) emit_selected(list_base, rank[e], k[e], t[e], p[e]);
    }
  }
  // Fewer candidates than keep: the rest of the list is empty.
  for (uint r = collected + lane; r < keep; r += W) emit_selected(list_base, r, kInvalid, kInvalid, kInvalid);
}

#endif
