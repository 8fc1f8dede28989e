// store_half_rows.comp: fp32 rows into an fp16 ring (the Q memory's queries).
#ifndef ATTENDRE_INTERFACE_STORE_HALF_H
#define ATTENDRE_INTERFACE_STORE_HALF_H
#include "interface/params.h"

ATT_NAMESPACE_BEGIN
ATT_PARAMS_BEGIN(StoreHalfParams)
  ATT_U32(rows)
  ATT_U32(row_floats)     // fp32 words per source row
  ATT_U32(stored_stride)  // elements per ring row as stored (even, >= row_floats)
  ATT_U32(first)          // ring row of source row 0
  ATT_U32(capacity)       // ring rows
ATT_PARAMS_END(StoreHalfParams)
ATT_NAMESPACE_END

#endif
