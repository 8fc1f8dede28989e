// rope.comp: rotary position embedding, in place.
#ifndef ATTENDRE_INTERFACE_ROPE_H
#define ATTENDRE_INTERFACE_ROPE_H
#include "interface/params.h"
#include "interface/rows.h"

ATT_NAMESPACE_BEGIN
// Rows one rope workgroup rotates per frequency it computes.
ATT_CONST(kRopeRowsPerGroup, 16u)

ATT_PARAMS_BEGIN(RopeParams)
  ATT_U32(rows)
  ATT_U32(heads)
  ATT_U32(head_dim)
  ATT_U32(rope_dims)  // even, <= head_dim: dims [0, rope_dims) of each head rotate
  ATT_U32(neox)       // 0: pairs (2i, 2i+1); 1: pairs (i, i + rope_dims / 2)
  ATT_F32(ratio_hi)   // theta^(-2 / rope_dims) as an unevaluated sum hi + lo of floats
  ATT_F32(ratio_lo)
  ATT_ROWS(x)         // rows of heads * head_dim floats, binding 0
  ATT_ROWS(pos)       // one int32 position per row (word 0 of the row), binding 1
ATT_PARAMS_END(RopeParams)
ATT_NAMESPACE_END

#endif
