// soft_cap.comp: X = cap * tanh(X / cap) in place, row by row.
#ifndef ATTENDRE_INTERFACE_SOFT_CAP_H
#define ATTENDRE_INTERFACE_SOFT_CAP_H
#include "interface/params.h"
#include "interface/rows.h"

ATT_NAMESPACE_BEGIN
ATT_PARAMS_BEGIN(SoftCapParams)
  ATT_U32(rows)
  ATT_U32(cols)
  ATT_F32(cap)  // > 0
  ATT_ROWS(x)   // binding 0
ATT_PARAMS_END(SoftCapParams)
ATT_NAMESPACE_END

#endif
