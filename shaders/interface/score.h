// score.comp: logits of queries in the Q ring against the K/V memory.
#ifndef ATTENDRE_INTERFACE_SCORE_H
#define ATTENDRE_INTERFACE_SCORE_H
#include "interface/params.h"

ATT_NAMESPACE_BEGIN
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
  ATT_U32(alibi)
  ATT_U32(ring_pos_offset)    // words, in the Q ring buffer
  ATT_U32(ring_valid_offset)
  ATT_U32(ring_tag_offset)
  ATT_U32(kv_key_offset)      // words, in the K/V buffer
  ATT_U32(kv_pos_offset)
  ATT_U32(kv_tag_offset)
ATT_PARAMS_END(ScoreParams)
ATT_NAMESPACE_END

#endif
