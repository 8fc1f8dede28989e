// activation.comp: out = act(x), or out = act(gate) * up (gated).
#ifndef ATTENDRE_INTERFACE_ACTIVATION_H
#define ATTENDRE_INTERFACE_ACTIVATION_H
#include "interface/params.h"
#include "interface/rows.h"
#include "interface/activation_kinds.h"

ATT_NAMESPACE_BEGIN

ATT_PARAMS_BEGIN(ActivationParams)
  ATT_U32(rows)
  ATT_U32(cols)
  ATT_U32(kind)   // kAct*
  ATT_U32(gated)
  ATT_ROWS(x)     // the activation's input (the gate when gated), binding 0
  ATT_ROWS(up)    // gated only, binding 0
  ATT_ROWS(out)   // binding 1
ATT_PARAMS_END(ActivationParams)
ATT_NAMESPACE_END

#endif
