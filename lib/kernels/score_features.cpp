#include "kernels/score_features.hpp"

#include <string>

namespace attendre::kernels {

uint32_t needed_score_features(uint32_t bias, float soft_cap, uint32_t window, uint32_t tag_mask) {
  uint32_t f = 0;
  if (bias == kBiasAlibi) f |= kScoreAlibi;
  if (bias == kBiasT5) f |= kScoreT5;
  if (soft_cap != 0.0f) f |= kScoreSoftCap;
  if (window != 0) f |= kScoreWindow;
  if (tag_mask != 0) f |= kScoreTags;
  return f;
}

uint32_t score_features(const RetrievalConfig& retrieval) {
  return needed_score_features(static_cast<uint32_t>(retrieval.bias), static_cast<float>(retrieval.soft_cap),
                               retrieval.window, retrieval.tag_mask ? 1u : 0u);
}

Status check_score_features(uint32_t built, uint32_t needed, const char* kernel) {
  const uint32_t missing = needed & ~built;
  if (missing == 0) return {};
  const char* name = (missing & kScoreAlibi)     ? "the ALiBi bias"
                     : (missing & kScoreT5)      ? "the T5 bias"
                     : (missing & kScoreSoftCap) ? "a logit soft cap"
                     : (missing & kScoreWindow)  ? "a sliding window"
                                                 : "tag masking";
  return Status{ErrorCode::invalid_argument,
                std::string(kernel) + ": the call needs " + name + ", which its pipeline was built without"};
}

}  // namespace attendre::kernels
