// rope.comp: rotary position embedding.
#ifndef ATTENDRE_INTERFACE_ROPE_H
#define ATTENDRE_INTERFACE_ROPE_H
#include "interface/params.h"
#include "interface/rows.h"

ATT_NAMESPACE_BEGIN
// Rows one rope workgroup rotates per frequency it reads.
ATT_CONST(kRopeRowsPerGroup, 16u)
// The angle table (kernels::rope_angle_table of a positions::RopeAngles):
// theta_scale and freq_scale, then one divisor per rotary pair.
ATT_CONST(kRopeTableHeaderWords, 2u)

ATT_PARAMS_BEGIN(RopeParams)
  ATT_U32(rows)
  ATT_U32(heads)
  ATT_U32(head_dim)
  ATT_U32(rope_dims)    // even, <= head_dim: dims [0, rope_dims) of each head rotate
  ATT_U32(neox)         // 0: pairs (2i, 2i+1); 1: pairs (i, i + rope_dims / 2)
  ATT_U32(use_fixed)    // 1: every row turns by fixed_position instead of its own
  ATT_I32(fixed_position)
  ATT_U32(table_offset) // words, in the frequency table binding
  // Invocation columns per head: rope_dims / 2 pairs, then (out of place)
  // ceil((head_dim - rope_dims) / 2) columns copying the dims that do not turn.
  ATT_U32(head_columns)
  ATT_ROWS(x)           // input rows of heads * head_dim floats, binding 0
  ATT_ROWS(y)           // output rows, binding 0 (y = x: in place; else disjoint)
  ATT_ROWS(pos)         // one int32 position per row (word 0 of the row), binding 1
  // rope_pair only: the second rows, turned in place, and their positions (both binding 3)
  ATT_U32(heads_b)
  ATT_ROWS(x_b)
  ATT_ROWS(pos_b)
ATT_PARAMS_END(RopeParams)
ATT_NAMESPACE_END

#endif
