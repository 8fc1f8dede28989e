// What positions add to a logit (score_positions.glsl): the position bias
// kinds and LM-Infinite's query and key variants, shared by the kernels
// that compute logits (score, flash_attend) and the host.
#ifndef ATTENDRE_INTERFACE_POSITIONS_H
#define ATTENDRE_INTERFACE_POSITIONS_H
#include "interface/params.h"

ATT_NAMESPACE_BEGIN
// Position bias (attendre::BiasKind's values).
ATT_CONST(kBiasNone, 0u)
ATT_CONST(kBiasAlibi, 1u)
ATT_CONST(kBiasT5, 2u)

// LM-Infinite (docs/spec-notes.md): each ring row holds its query rotated
// three ways and each memory slot its key two ways, in this order; a pair
// is scored with one of them by its distance d = p_query - p_key:
//   |d| <= n_local           local:  R(p_q) q . R(p_j) k   (true distance)
//   d > n_local, or a sink   past:   R(+n_local) q . k     (d_eff = +n_local)
//   d < -n_local             future: R(-n_local) q . k     (d_eff = -n_local)
ATT_CONST(kLmQueryVariants, 3u)
ATT_CONST(kLmKeyVariants, 2u)
ATT_CONST(kLmLocal, 0u)   // query variant 0 with key variant 0
ATT_CONST(kLmPast, 1u)    // query variant 1 with key variant 1 (un-rotated)
ATT_CONST(kLmFuture, 2u)  // query variant 2 with key variant 1

// The scoring features a logit kernel's pipeline is built for (the
// specialization constant SCORE_FEATURES of score.comp, score_direct.comp
// and flash_attend.comp; kernels::score_features). A CPU device runs both sides
// of every branch, so a feature a pipeline leaves out costs its logits
// nothing (ALiBi's exp2, T5's table loads, the soft cap's tanh, the tag
// loads); a call that needs one its pipeline lacks is refused on the host.
ATT_CONST(kScoreAlibi, 1u)
ATT_CONST(kScoreT5, 2u)
ATT_CONST(kScoreSoftCap, 4u)
ATT_CONST(kScoreWindow, 8u)
ATT_CONST(kScoreTags, 16u)
ATT_CONST(kScoreAllFeatures, 31u)
ATT_NAMESPACE_END

#endif
