// What positions add to a logit, for score.comp, score_direct.comp and
// flash_attend.comp (included after their bindings: reads pc, ScoreParams
// or FlashParams, and kv[]): the LM-Infinite variant a pair is scored
// with, the sliding-window mask, the soft-cap and the ALiBi or T5 bias.
// The including kernel declares SCORE_FEATURES (a specialization constant,
// interface/positions.h): the features its pipeline was built for; those
// it lacks fold away here (the host refuses calls that need them).
#ifndef ATTENDRE_SCORE_POSITIONS_GLSL
#define ATTENDRE_SCORE_POSITIONS_GLSL

#include "soft_cap.glsl"

bool score_feature(uint feature) { return (SCORE_FEATURES & feature) != 0u; }

// |p_query - p_key| without overflow: int32 positions differ by < 2^32.
uint position_distance(int p_query, int p_key) {
  return p_query >= p_key ? uint(p_query) - uint(p_key) : uint(p_key) - uint(p_query);
}

#ifndef NO_LM_INFINITE  // flash_attend.comp: FlashParams has no n_local
// kLmLocal, kLmPast or kLmFuture (interface/score.h). Sinks beyond n_local
// sit at the cap in front of the query whatever side they are on.
uint lm_variant(int p_query, int p_key) {
  if (position_distance(p_query, p_key) <= pc.n_local) return kLmLocal;
  const bool sink = pc.n_sink > 0u && p_key < int(pc.n_sink);
  return p_query > p_key || sink ? kLmPast : kLmFuture;
}
#endif

// The sliding window (RetrievalConfig::window, 0: none) hides keys
// pc.window or more positions behind the query.
bool outside_window(int p_query, int p_key) {
  return score_feature(kScoreWindow) && pc.window != 0u && p_query >= p_key && uint(p_query) - uint(p_key) >= pc.window;
}

// The scaled dot product as a logit before its position bias:
// soft-capped (RetrievalConfig::soft_cap, 0: none).
float capped_logit(float dot) { return score_feature(kScoreSoftCap) ? soft_cap(dot, pc.soft_cap) : dot; }

// Whether keys of another tag than the query's are masked (RetrievalConfig::tag_mask).
bool tag_masking() { return score_feature(kScoreTags) && pc.tag_mask != 0u; }

// ALiBi: -slope_h * |d|, slope_h = 2^(-8 (h + 1) / heads_q) (the host's
// attendre::alibi_slope). T5: table[bucket(p_key - p_query)][h], the
// bucket read from the host's table (core/positions.cpp), which keeps T5's
// float32 rounding exact on every device.
float position_bias(uint h, int p_query, int p_key) {
  if (score_feature(kScoreAlibi) && pc.bias == kBiasAlibi)
    return -exp2(-8.0 * float(h + 1u) / float(pc.heads_q)) * float(position_distance(p_query, p_key));
  if (score_feature(kScoreT5) && pc.bias == kBiasT5) {
    const uint r = min(position_distance(p_query, p_key), pc.t5_max_distance);
    const uint at = p_key >= p_query ? pc.t5_max_distance + r : pc.t5_max_distance - r;
    const uint bucket = kv[pc.t5_buckets_offset + at];
    return uintBitsToFloat(kv[pc.t5_biases_offset + bucket * pc.heads_q + h]);
  }
  return 0.0;
}

// The logit of a pair from its scaled dot product. Builds without a bias
// give the same bits: the 0.0 they may leave out changes no sum of
// products, which are never -0.0 (each starts from +0.0).
float pair_logit(float dot, uint h, int p_query, int p_key) {
  return capped_logit(dot) + position_bias(h, p_query, p_key);
}

#endif
