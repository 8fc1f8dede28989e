// The insertion kernels: score_stats, insert_plan, insert_scatter, evict_copy.
// They share one parameter block: each reads the fields it needs.
#ifndef ATTENDRE_INTERFACE_INSERT_H
#define ATTENDRE_INTERFACE_INSERT_H
#include "interface/params.h"

ATT_NAMESPACE_BEGIN
ATT_PARAMS_BEGIN(InsertParams)
  ATT_U32(held)             // occupied slots before this insertion
  ATT_U32(capacity)         // M
  ATT_U32(rows)             // chunk rows (S)
  ATT_U32(victims)          // E
  ATT_U32(n_sink)
  ATT_U32(policy)
  ATT_U32(init_constant)    // 1: the initial score is init_value, else mu - init_k * sigma
  ATT_F32(init_k)
  ATT_F32(init_value)
  ATT_U32(kv_row)           // floats per key or value: heads_kv * head_dim
  ATT_U32(kv_key_offset)    // words, in the K/V buffer
  ATT_U32(kv_value_offset)
  ATT_U32(kv_pos_offset)
  ATT_U32(kv_score_offset)
  ATT_U32(kv_tag_offset)
  ATT_U32(chunk_key_offset)   // words, in the chunk buffer
  ATT_U32(chunk_value_offset)
  ATT_U32(chunk_pos_offset)
  ATT_U32(chunk_valid_offset)
  ATT_U32(chunk_tag_offset)
  ATT_U32(chunk_init_offset)
  ATT_U32(chunk_place_offset)
  ATT_U32(out_key_offset)     // words, in the evicted-entries buffer
  ATT_U32(out_value_offset)
  ATT_U32(out_pos_offset)
  ATT_U32(out_score_offset)
ATT_PARAMS_END(InsertParams)
ATT_NAMESPACE_END

#endif
