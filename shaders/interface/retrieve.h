// Retrieval kernels after scoring: sum_heads (shared mode), attend and usage.
// They share one parameter block; each reads the fields it needs.
#ifndef ATTENDRE_INTERFACE_RETRIEVE_H
#define ATTENDRE_INTERFACE_RETRIEVE_H
#include "interface/params.h"

ATT_NAMESPACE_BEGIN
ATT_PARAMS_BEGIN(RetrieveParams)
  ATT_U32(queries)        // queries in this batch
  ATT_U32(heads_q)
  ATT_U32(heads_kv)
  ATT_U32(head_dim)
  ATT_U32(held)
  ATT_U32(logit_stride)   // floats per logits row
  ATT_U32(summed_offset)  // floats: shared-mode rows [query][logit_stride] in the logits buffer
  // R(q,h): either slots 0..held-1 (full attention) or list tile 0 of a row
  ATT_U32(full)
  ATT_U32(shared_lists)   // one list per query (shared mode) instead of per (query, head)
  ATT_U32(list_count)     // entries per list: K, or held when full
  ATT_U32(list_tiles)
  ATT_U32(list_keep)
  ATT_U32(kv_value_offset)
  ATT_U32(kv_value_stride)  // elements per slot of values as the memory stores them
  ATT_U32(out_offset)       // words in the attention buffer: o[step query][h][d]
  ATT_U32(out_first_query)  // step index of this batch's first query
  ATT_U32(weight_offset)    // words in the attention buffer: a[row][weight_stride], -1 = not in R
  ATT_U32(weight_stride)
  ATT_U32(usage_stride)     // words per query row of usage and used
  ATT_U32(used_offset)      // words in the usage buffer where used flags start
ATT_PARAMS_END(RetrieveParams)
ATT_NAMESPACE_END

#endif
