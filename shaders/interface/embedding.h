// embedding.comp: out[r] = table[ids[r]] (zeros for ids >= vocab).
#ifndef ATTENDRE_INTERFACE_EMBEDDING_H
#define ATTENDRE_INTERFACE_EMBEDDING_H
#include "interface/params.h"
#include "interface/rows.h"

ATT_NAMESPACE_BEGIN
ATT_PARAMS_BEGIN(EmbeddingParams)
  ATT_U32(rows)
  ATT_U32(dim)
  ATT_U32(vocab)
  ATT_U32(table_offset)  // where the table starts: elements or bytes, as w_offset (interface/matmul.h)
  ATT_ROWS(ids)          // one uint32 id per row (word 0 of the row), binding 0
  ATT_ROWS(out)          // rows of dim floats, binding 2
ATT_PARAMS_END(EmbeddingParams)
ATT_NAMESPACE_END

#endif
