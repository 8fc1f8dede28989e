// Which scoring features (ALiBi, T5, soft cap, sliding window, tag mask) a
// logit kernel's pipeline is built for: the SCORE_FEATURES specialization
// constant of score.comp, score_direct.comp and flash_attend.comp
// (interface/positions.h).
// A CPU device runs both sides of every branch, so each feature left out
// saves every logit its work; a memory builds its kernels for its own
// RetrievalConfig, and a call needing more than a pipeline has is refused.
#pragma once

#include "interface/positions.h"

#include <attendre/config.hpp>
#include <attendre/status.hpp>

#include <cstdint>

namespace attendre::kernels {

// The features a call with these fields (ScoreParams' and FlashParams' names) needs.
uint32_t needed_score_features(uint32_t bias, float soft_cap, uint32_t window, uint32_t tag_mask);

// The features every call of a memory with `retrieval` needs.
uint32_t score_features(const RetrievalConfig& retrieval);

// Fails (invalid_argument, naming `kernel` and the feature) when the call
// `p` needs a feature that the pipeline, built for `built`, leaves out.
Status check_score_features(uint32_t built, uint32_t needed, const char* kernel);
template <class Params>
Status check_score_features(uint32_t built, const Params& p, const char* kernel) {
  return check_score_features(built, needed_score_features(p.bias, p.soft_cap, p.window, p.tag_mask), kernel);
}

}  // namespace attendre::kernels
