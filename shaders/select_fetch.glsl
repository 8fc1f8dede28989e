// The bindings and candidates of a selection row, as (key, tie, payload)
// triples sorted ascending, shared by select_tile.comp and
// select_direct.comp (the including shader includes interface/select_tile.h).
//   SOURCE_LOGITS  key = larger logit first, tie = smaller position,
//                  payload = slot (masked slots carry the -inf key)
//   SOURCE_EVICT   key = policy score, tie = smaller position, payload =
//                  slot or kNewRow | chunk row; pinned entries, the
//                  recent window and protected new rows are not
//                  candidates (all kInvalid)
// insert_direct.comp, which selects, places and writes in one kernel,
// defines SELECT_WRITES_KV (the K/V memory writable) and SELECT_NO_LISTS
// (its list stays in shared memory).
#ifndef ATTENDRE_SELECT_FETCH_GLSL
#define ATTENDRE_SELECT_FETCH_GLSL

#include "new_entry.glsl"

#ifdef SOURCE_LOGITS
layout(std430, binding = 0) readonly buffer Logits { float logits[]; };
layout(std430, binding = 1) readonly buffer KvMemory { uint kv[]; };
#else
#ifdef SELECT_WRITES_KV
layout(std430, binding = 0) buffer KvMemory { uint kv[]; };
#else
layout(std430, binding = 0) readonly buffer KvMemory { uint kv[]; };
#endif
layout(std430, binding = 1) readonly buffer Chunk { uint chunk[]; };
#endif
#ifndef SELECT_NO_LISTS
layout(std430, binding = 2) writeonly buffer Lists { uint lists[]; };
#endif

#ifdef SOURCE_LOGITS
// A logit's key and tie apart, at word indices the caller computes: kernels
// that read the position only where the key is good enough
// (select_direct.comp) add the push constants to their indices once,
// outside their loops (lavapipe reloads a push constant read in a loop lane
// by lane).
uint logit_key_at(uint word) { return ~ordered_float(logits[word]); }
uint logit_tie_at(uint word) { return ordered_int(int(kv[word])); }
#endif

void fetch(uint row, uint index, out uint key, out uint tie, out uint payload) {
#ifdef SOURCE_LOGITS
  key = logit_key_at(pc.source_offset + row * pc.source_stride + index);
  tie = logit_tie_at(pc.kv_pos_offset + index);
  payload = index;
#else
  key = kInvalid;
  tie = kInvalid;
  payload = kInvalid;
  int position;
  uint score_bits;
  if (index < pc.held) {
    position = int(kv[pc.kv_pos_offset + index]);
    score_bits = kv[pc.kv_score_offset + index];
    payload = index;
  } else {
    const uint r = index - pc.held;
    if (chunk[pc.chunk_valid_offset + r] == 0u) return;
    position = int(chunk[pc.chunk_pos_offset + r]);
    // A new row competes with its initial score.
    score_bits = initial_score_bits(pc.policy, position, chunk[pc.chunk_init_offset]);
    payload = kNewRow | r;
  }
  if (pc.n_sink > 0u && position < int(pc.n_sink)) {  // pinned: never a victim (none when n_sink is 0)
    payload = kInvalid;
    return;
  }
  if (pc.n_recent > 0u && position >= pc.recent_from) {  // in the recent window: never a victim
    payload = kInvalid;
    return;
  }
  key = pc.int_scores != 0u ? ordered_int(int(score_bits)) : ordered_float(uintBitsToFloat(score_bits));
  tie = ordered_int(position);
#endif
}

#endif
