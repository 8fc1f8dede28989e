// flash_attend.comp and flash_combine.comp: dense attention (spec 2.2-2.3
// with K >= M) in one pass over the K/V memory, without a logits buffer.
#ifndef ATTENDRE_INTERFACE_FLASH_H
#define ATTENDRE_INTERFACE_FLASH_H
#include "interface/params.h"
#include "interface/positions.h"

ATT_NAMESPACE_BEGIN
// Words per (split, query, head) partial: the accumulator [head_dim], then
// the running max and the running sum of exponentials.
#define ATT_FLASH_PARTIAL_WORDS(head_dim) ((head_dim) + 2u)

// One parameter block for both kernels; each reads the fields it needs.
// The names of the position fields are score.h's: flash includes
// score_positions.glsl for the masks, the soft-cap and the ALiBi and T5
// biases (not LM-Infinite's n_local: flash has no LM-Infinite variant, and
// the block is at the 128-byte minimum).
ATT_PARAMS_BEGIN(FlashParams)
  ATT_U32(ring_first)      // ring index of the batch's first query (not yet wrapped)
  ATT_U32(ring_capacity)
  ATT_U32(queries)         // queries in this batch
  ATT_U32(held)            // occupied slots 0..held-1
  ATT_U32(heads_q)
  ATT_U32(heads_kv)
  ATT_F32(scale)
  ATT_U32(causal)
  ATT_U32(tag_mask)
  ATT_U32(bias)               // kBiasNone, kBiasAlibi or kBiasT5 (interface/positions.h)
  ATT_U32(ring_q_stride)      // elements per ring row of queries as stored
  ATT_U32(ring_pos_offset)    // words, in the Q ring buffer
  ATT_U32(ring_valid_offset)
  ATT_U32(ring_tag_offset)
  ATT_U32(kv_key_offset)      // words, in the K/V buffer
  ATT_U32(kv_key_stride)      // elements per slot of keys as stored
  ATT_U32(kv_value_offset)
  ATT_U32(kv_value_stride)
  ATT_U32(kv_pos_offset)
  ATT_U32(kv_tag_offset)
  ATT_U32(n_sink)
  ATT_U32(t5_buckets_offset)
  ATT_U32(t5_biases_offset)
  ATT_U32(t5_max_distance)
  ATT_U32(window)             // sliding window: keys window or more positions behind are masked; 0: none
  ATT_F32(soft_cap)           // logits soft-capped: cap * tanh(logit / cap); 0: none
  ATT_U32(chunk)              // slots per split: split s covers [s * chunk, (s + 1) * chunk)
  ATT_U32(splits)             // 1: the outputs are written at once; else partials, then flash_combine
  ATT_U32(out_offset)         // words in the output buffer: o[step query][h][d]
  ATT_U32(out_first_query)    // step index of this batch's first query
  ATT_U32(lse_offset)         // words in the output buffer: log-sum-exp [step query][h], -inf for empty rows
  ATT_U32(partial_offset)     // words in the partials buffer: [split][query][h][ATT_FLASH_PARTIAL_WORDS]
ATT_PARAMS_END(FlashParams)
ATT_NAMESPACE_END

#endif
