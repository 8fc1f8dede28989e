// add.comp: C = A + B, row by row.
#ifndef ATTENDRE_INTERFACE_ADD_H
#define ATTENDRE_INTERFACE_ADD_H
#include "interface/params.h"
#include "interface/rows.h"

ATT_NAMESPACE_BEGIN
ATT_PARAMS_BEGIN(AddParams)
  ATT_U32(rows)
  ATT_U32(cols)
  ATT_ROWS(a)  // binding 0
  ATT_ROWS(b)  // binding 1
  ATT_ROWS(c)  // binding 2
ATT_PARAMS_END(AddParams)
ATT_NAMESPACE_END

#endif
