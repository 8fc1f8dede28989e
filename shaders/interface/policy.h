// policy_update.comp: new policy scores from one batch of queries' usage.
#ifndef ATTENDRE_INTERFACE_POLICY_H
#define ATTENDRE_INTERFACE_POLICY_H
#include "interface/params.h"

ATT_NAMESPACE_BEGIN
ATT_PARAMS_BEGIN(PolicyParams)
  ATT_U32(policy)
  ATT_U32(held)
  ATT_U32(queries)         // queries in this batch
  ATT_U32(ring_first)      // ring index of the batch's first query
  ATT_U32(ring_capacity)
  ATT_U32(ring_pos_offset)
  ATT_U32(ring_valid_offset)
  ATT_U32(usage_stride)
  ATT_U32(used_offset)
  ATT_U32(first_batch)     // 1: replace-style policies start from 0, lfa applies its decay
  ATT_U32(last_query)      // batch index of the step's last valid query, or kInvalid
  ATT_I32(i_max)           // spec 2.4: largest valid query position so far, this step included
  ATT_I32(i_prev)          // its value before this step
  ATT_F32(lambda)
  ATT_F32(inv_heads)       // 1 / heads_q
  ATT_U32(kv_score_offset)
ATT_PARAMS_END(PolicyParams)
ATT_NAMESPACE_END

#endif
