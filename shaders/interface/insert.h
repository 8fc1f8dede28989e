// The insertion kernels: score_stats, insert_plan, insert_scatter, evict_copy
// and insert_direct (the constants).
// What changes per step is pushed (InsertParams); what is fixed for one
// memory (its capacity, policy and layouts) is specialized (InsertConstants),
// so each memory's pipelines are built once with its constants folded in.
#ifndef ATTENDRE_INTERFACE_INSERT_H
#define ATTENDRE_INTERFACE_INSERT_H
#include "interface/params.h"

ATT_NAMESPACE_BEGIN
// insert_direct.comp pushes SelectTileParams instead (INSERT_CONSTANTS_ONLY).
#if !defined(INSERT_CONSTANTS_ONLY)
ATT_PARAMS_BEGIN(InsertParams)
  ATT_U32(held)     // occupied slots before this insertion
  ATT_U32(victims)  // E
ATT_PARAMS_END(InsertParams)
#endif

// Specialization constants 1.. of every insertion kernel (sc_<name> in GLSL).
#define ATT_INSERT_CONSTANTS(U, F)                                                          \
  U(1, capacity)           /* M */                                                         \
  U(2, rows)               /* chunk rows (S, or more for a stack's flush) */               \
  U(3, n_sink)                                                                             \
  U(4, policy)                                                                             \
  U(5, init_constant)      /* 1: the initial score is init_value, else mu - init_k sigma */ \
  F(6, init_k)                                                                             \
  F(7, init_value)                                                                         \
  U(8, kv_row)             /* floats per key or value: heads_kv * head_dim */             \
  U(9, kv_key_offset)      /* words, in the K/V buffer */                                  \
  U(10, kv_value_offset)                                                                   \
  U(11, kv_pos_offset)                                                                     \
  U(12, kv_score_offset)                                                                   \
  U(13, kv_tag_offset)                                                                     \
  U(14, chunk_key_offset)  /* words, in the chunk buffer */                                \
  U(15, chunk_value_offset)                                                                \
  U(16, chunk_pos_offset)                                                                  \
  U(17, chunk_valid_offset)                                                                \
  U(18, chunk_tag_offset)                                                                  \
  U(19, chunk_init_offset)                                                                 \
  U(20, chunk_place_offset)                                                                \
  U(21, out_key_offset)    /* words, in the evicted-entries buffer */                      \
  U(22, out_value_offset)                                                                  \
  U(23, out_pos_offset)                                                                    \
  U(24, out_score_offset)                                                                  \
  U(25, key_stride)        /* words per key row of the chunk (its variants); of the memory in fp32 */ \
  U(26, kv_key_stride)     /* elements per slot of keys as the memory stores them */           \
  U(27, kv_value_stride)   /* elements per slot of values as stored (fp16: even) */
ATT_SPEC_STRUCT(InsertConstants, ATT_INSERT_CONSTANTS)
ATT_NAMESPACE_END

#endif
