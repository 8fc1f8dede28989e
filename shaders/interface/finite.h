// check_finite.comp: flags NaN or infinity among `count` floats.
#ifndef ATTENDRE_INTERFACE_FINITE_H
#define ATTENDRE_INTERFACE_FINITE_H
#include "interface/params.h"

ATT_NAMESPACE_BEGIN
ATT_PARAMS_BEGIN(FiniteParams)
  ATT_U32(first)  // word of binding 0
  ATT_U32(count)  // floats
  ATT_U32(first_b)  // check_finite_pair: word of binding 2
  ATT_U32(count_b)  // check_finite_pair: floats
ATT_PARAMS_END(FiniteParams)
ATT_NAMESPACE_END

#endif
