// Position encodings, defined once for every backend: RoPE frequencies
// under scaling, T5's relative position buckets and LM-Infinite's capped
// distance. The float64 reference evaluates them directly; the device's
// host side turns them into the tables its kernels read.
#pragma once

#include <attendre/config.hpp>
#include <attendre/transformer.hpp>

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace attendre::positions {

// Angular frequency (radians per position) of rotary pair i < rope_dims / 2:
// theta^(-2i / rope_dims), scaled as `scaling` says, in float64. `factors`
// are the per-pair divisors of rope_freqs.weight (scaling.freq_factors only).
// invalid_argument when `factors` are not rope_dims / 2 positive numbers.
Result<std::vector<double>> rope_frequencies(double theta, uint32_t rope_dims, const RopeScaling& scaling,
                                             std::span<const double> factors = {});

// The float recipe llama.cpp's RoPE (ggml's CPU backend, ggml_rope_cache_init
// and rope_yarn without YaRN) turns pairs by, so that logits match it to
// float rounding: the angle of pair i at position p is
//   freq_scale * ((p * theta_scale * ... * theta_scale) / divisor_i)
// with i multiplications by theta_scale, each rounded to float, left to right.
struct RopeAngles {
  float theta_scale = 1.0f;     // powf(float(theta), -2.0f / rope_dims)
  float freq_scale = 1.0f;      // linear scaling: 1.0f / float(factor); else 1
  std::vector<float> divisors;  // per pair: rope_freqs.weight, llama3's 1 / s_i, or 1
};

// The recipe for `rope_frequencies`' pairs: the same scalings, llama3's from
// keys as per-pair divisors rounded to float (what convert_hf_to_gguf.py
// writes to rope_freqs.weight). Fails as rope_frequencies does.
Result<RopeAngles> rope_angles(double theta, uint32_t rope_dims, const RopeScaling& scaling,
                               std::span<const double> factors = {});
// Radians pair `pair` turns by at `position`, in float as above.
float rope_angle(const RopeAngles& angles, int64_t position, uint32_t pair);

// invalid_argument naming the first bad field, prefixed by `at`, or ok.
Status check(const RopeScaling& scaling, const std::string& at);
Status check(const T5Buckets& t5, uint32_t heads_q, bool need_table, const std::string& at);

// T5's bucket of a key `relative` = p_key - p_query positions from its query.
uint32_t t5_bucket(int64_t relative, const T5Buckets& t5);
// Buckets of relative positions -max_distance..max_distance (entry
// relative + max_distance); every farther key shares its end's bucket.
// (A failure is a broken invariant of the bucket math: the ends must saturate.)
Result<std::vector<uint32_t>> t5_bucket_table(const T5Buckets& t5);

// Spec 2.2's bias(h, p_q, p_j) under `retrieval`: 0, ALiBi or T5 (whose table it needs).
double logit_bias(const RetrievalConfig& retrieval, uint32_t h, uint32_t heads_q, int64_t p_query, int64_t p_key);

// LM-Infinite: the distance a pair d = p_query - p_key apart is scored at.
int64_t lm_infinite_distance(int64_t distance, uint32_t n_local, bool sink);

}  // namespace attendre::positions
