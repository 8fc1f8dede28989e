// score.comp / score_direct.comp: logits of queries in the Q ring against
// the K/V memory, with their position terms.
#ifndef ATTENDRE_INTERFACE_SCORE_H
#define ATTENDRE_INTERFACE_SCORE_H
#include "interface/params.h"
#include "interface/positions.h"

ATT_NAMESPACE_BEGIN
// Shared memory of the tiled score kernel (score.comp declares its tiles
// with it; the kernel plan sizes TILE_D by it): q tiles of TILE_R rows and
// k tiles of TILE_M slots, TILE_D dims each plus one pad against bank
// conflicts, one per query / key variant.
#define ATT_SCORE_SHARED_FLOATS(tile_r, tile_m, tile_d, q_variants, k_variants) \
  ((q_variants) * (tile_r) * ((tile_d) + 1u) + (k_variants) * (tile_m) * ((tile_d) + 1u))

ATT_PARAMS_BEGIN(ScoreParams)
  ATT_U32(ring_first)      // ring index of the batch's first query (not yet wrapped)
  ATT_U32(ring_capacity)
  ATT_U32(queries)         // queries in this batch
  ATT_U32(held)            // occupied slots 0..held-1
  ATT_U32(logit_stride)    // floats per logits row (>= held)
  ATT_U32(heads_q)
  ATT_U32(heads_kv)
  ATT_U32(head_dim)
  ATT_F32(scale)
  ATT_U32(causal)
  ATT_U32(tag_mask)
  ATT_U32(bias)               // kBiasNone, kBiasAlibi or kBiasT5
  ATT_U32(ring_q_stride)      // elements per ring row of queries as stored (its variants)
  ATT_U32(ring_pos_offset)    // words, in the Q ring buffer
  ATT_U32(ring_valid_offset)
  ATT_U32(ring_tag_offset)
  ATT_U32(kv_key_offset)      // words, in the K/V buffer
  ATT_U32(kv_key_stride)      // elements per slot of keys as stored (its variants)
  ATT_U32(kv_pos_offset)
  ATT_U32(kv_tag_offset)
  ATT_U32(n_local)            // LM-Infinite's cap (the LM_INFINITE variant only)
  ATT_U32(n_sink)             // sinks: n_sink > 0 and p_key < n_sink (spec 2.1)
  ATT_U32(t5_buckets_offset)  // words, in the K/V buffer: bucket of relative position r at r + t5_max_distance
  ATT_U32(t5_biases_offset)   // words, in the K/V buffer: [bucket][heads_q] floats
  ATT_U32(t5_max_distance)
  ATT_U32(window)             // sliding window: keys window or more positions behind are masked; 0: none
  ATT_F32(soft_cap)           // logits soft-capped: cap * tanh(logit / cap); 0: none
ATT_PARAMS_END(ScoreParams)
ATT_NAMESPACE_END

#endif
