// embedding.comp: out[r] = scale * table[ids[r] - first_id] for ids in [first_id,
// first_id + vocab); the part at first_id 0 writes zeros for the other ids.
#ifndef ATTENDRE_INTERFACE_EMBEDDING_H
#define ATTENDRE_INTERFACE_EMBEDDING_H
#include "interface/params.h"
#include "interface/rows.h"

ATT_NAMESPACE_BEGIN
ATT_PARAMS_BEGIN(EmbeddingParams)
  ATT_U32(rows)
  ATT_U32(dim)
  ATT_U32(vocab)         // rows of this part of the table: ids first_id .. first_id + vocab - 1
  ATT_U32(table_offset)  // where the table starts: elements or bytes, as w_offset (interface/matmul.h)
  ATT_ROWS(ids)          // one uint32 id per row (word 0 of the row), binding 0
  ATT_ROWS(out)          // rows of dim floats, binding 2
  ATT_U32(first_id)      // the id of the part's row 0 (a table split by rows over storage ranges)
  ATT_F32(scale)         // every value is multiplied by it (StackConfig::embedding_scale)
ATT_PARAMS_END(EmbeddingParams)
ATT_NAMESPACE_END

#endif
