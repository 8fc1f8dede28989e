// activation.comp: out = act(x), or out = act(gate) * up (gated).
#ifndef ATTENDRE_INTERFACE_ACTIVATION_H
#define ATTENDRE_INTERFACE_ACTIVATION_H
#include "interface/params.h"
#include "interface/rows.h"

ATT_NAMESPACE_BEGIN
// Activation ids (match attendre::ActivationKind).
ATT_CONST(kActSilu, 0u)
ATT_CONST(kActGeluTanh, 1u)
ATT_CONST(kActRelu, 2u)

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
