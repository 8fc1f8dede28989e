// norm.comp: RMSNorm, or LayerNorm with -DLAYER_NORM, one row per workgroup.
#ifndef ATTENDRE_INTERFACE_NORM_H
#define ATTENDRE_INTERFACE_NORM_H
#include "interface/params.h"
#include "interface/rows.h"

ATT_NAMESPACE_BEGIN
ATT_PARAMS_BEGIN(NormParams)
  ATT_U32(rows)
  ATT_U32(dim)
  ATT_F32(eps)
  ATT_U32(g_offset)  // words in the weight binding: g[dim]
  ATT_U32(b_offset)  // words in the weight binding: b[dim] (LayerNorm only)
  ATT_U32(segments)  // per row: segments of dim floats normalized separately (per-head q/k norms), >= 1
  ATT_ROWS(x)        // binding 0
  ATT_ROWS(y)        // binding 2; may be x itself (in place)
ATT_PARAMS_END(NormParams)
ATT_NAMESPACE_END

#endif
