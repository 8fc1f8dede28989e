// The activation functions' ids (activation.glsl; match attendre::ActivationKind),
// apart from activation.comp's parameters so that the gated products
// (matmul_direct.comp's GATED) name them too.
#ifndef ATTENDRE_INTERFACE_ACTIVATION_KINDS_H
#define ATTENDRE_INTERFACE_ACTIVATION_KINDS_H
#include "interface/params.h"

ATT_NAMESPACE_BEGIN
ATT_CONST(kActSilu, 0u)
ATT_CONST(kActGeluTanh, 1u)
ATT_CONST(kActRelu, 2u)
ATT_NAMESPACE_END

#endif
