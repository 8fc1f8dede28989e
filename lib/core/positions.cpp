#include "core/positions.hpp"

#include "core/number_text.hpp"
#include "core/try.hpp"

#include <algorithm>
#include <cmath>
#include <numbers>

namespace attendre::positions {
namespace {

bool positive(double x) { return x > 0.0 && std::isfinite(x); }

// The largest max_distance whose bucket table the device keeps (2 * it + 1 words).
constexpr uint32_t kMaxT5Distance = 1u << 16;

uint32_t t5_half_buckets(const T5Buckets& t5) { return t5.bidirectional ? t5.num_buckets / 2 : t5.num_buckets; }

}  // namespace

Result<std::vector<double>> rope_frequencies(double theta, uint32_t rope_dims, const RopeScaling& scaling,
                                             std::span<const double> factors) {
  ATTENDRE_REQUIRE(!scaling.freq_factors || factors.size() == rope_dims / 2,
          "rope_freqs.weight holds " + std::to_string(factors.size()) + " factors, expected rope_dims / 2 = " +
              std::to_string(rope_dims / 2));
  for (double x : factors)
    ATTENDRE_REQUIRE(positive(x), "rope_freqs.weight holds a factor that is not positive: " + shortest_text(x));
  std::vector<double> f(rope_dims / 2);
  for (uint32_t i = 0; i < f.size(); ++i) {
    f[i] = std::pow(theta, -2.0 * i / rope_dims);
    if (scaling.kind == RopeScaling::Kind::linear) f[i] /= scaling.factor;
    if (scaling.kind == RopeScaling::Kind::llama3) {
      // Meta's apply_scaling (llama3.1 reference code), term by term.
      const double wavelen = 2.0 * std::numbers::pi / f[i];
      const double low_freq_wavelen = scaling.original_context / scaling.low_freq_factor;
      const double high_freq_wavelen = scaling.original_context / scaling.high_freq_factor;
      if (wavelen > low_freq_wavelen) {
        f[i] /= scaling.factor;
      } else if (wavelen >= high_freq_wavelen) {
        const double smooth = (scaling.original_context / wavelen - scaling.low_freq_factor) /
                              (scaling.high_freq_factor - scaling.low_freq_factor);
        f[i] = (1.0 - smooth) * f[i] / scaling.factor + smooth * f[i];
      }
    }
    if (scaling.freq_factors) f[i] /= factors[i];  // llama.cpp: theta / freq_factor
  }
  return f;
}

Result<RopeAngles> rope_angles(double theta, uint32_t rope_dims, const RopeScaling& scaling,
                               std::span<const double> factors) {
  ATTENDRE_TRY_ASSIGN(const std::vector<double> f, rope_frequencies(theta, rope_dims, scaling, factors));
  RopeAngles a;  // each step as ggml's float arithmetic takes it
  a.theta_scale = std::pow(static_cast<float>(theta), -2.0f / static_cast<float>(rope_dims));
  if (scaling.kind == RopeScaling::Kind::linear) a.freq_scale = 1.0f / static_cast<float>(scaling.factor);
  for (uint32_t i = 0; i < f.size(); ++i) {
    double divisor = 1.0;
    if (scaling.freq_factors) divisor = factors[i];
    // llama3 from keys: the divisor the converter would have written (unscaled / scaled frequency).
    if (scaling.kind == RopeScaling::Kind::llama3) divisor = std::pow(theta, -2.0 * i / rope_dims) / f[i];
    a.divisors.push_back(static_cast<float>(divisor));
  }
  return a;
}

float rope_angle(const RopeAngles& angles, int64_t position, uint32_t pair) {
  float theta = static_cast<float>(position);
  for (uint32_t i = 0; i < pair; ++i) theta *= angles.theta_scale;
  return angles.freq_scale * (theta / angles.divisors[pair]);
}

Status check(const RopeScaling& s, const std::string& at) {
  if (s.kind != RopeScaling::Kind::none)
    ATTENDRE_REQUIRE(positive(s.factor), at + "rope scaling factor must be positive, got " + shortest_text(s.factor));
  if (s.kind == RopeScaling::Kind::llama3) {
    ATTENDRE_REQUIRE(positive(s.low_freq_factor) && positive(s.high_freq_factor) && s.high_freq_factor > s.low_freq_factor,
            at + "llama3 rope scaling needs 0 < low_freq_factor < high_freq_factor");
    ATTENDRE_REQUIRE(positive(s.original_context), at + "llama3 rope scaling needs a positive original_context");
    ATTENDRE_REQUIRE(!s.freq_factors, at + "llama3 rope scaling and rope_freqs.weight factors would scale twice");
  }
  return {};
}

Status check(const T5Buckets& t5, uint32_t heads_q, bool need_table, const std::string& at) {
  const uint32_t half = t5_half_buckets(t5);
  ATTENDRE_REQUIRE(half / 2 >= 1, at + "t5 needs at least " + std::string(t5.bidirectional ? "4" : "2") +
                             " buckets, got " + std::to_string(t5.num_buckets));
  ATTENDRE_REQUIRE(t5.max_distance > half / 2 && t5.max_distance <= kMaxT5Distance,
          at + "t5 max_distance must exceed the exact buckets (" + std::to_string(half / 2) + ") and be at most " +
              std::to_string(kMaxT5Distance) + ", got " + std::to_string(t5.max_distance));
  const uint64_t size = uint64_t{t5.num_buckets} * heads_q;
  if (need_table || !t5.table.empty())
    ATTENDRE_REQUIRE(t5.table.size() == size, at + "t5 bias table holds " + std::to_string(t5.table.size()) +
                                         " values, expected num_buckets * heads_q = " + std::to_string(size));
  for (float x : t5.table) ATTENDRE_REQUIRE(std::isfinite(x), at + "t5 bias table holds a non-finite value");
  return {};
}

uint32_t t5_bucket(int64_t relative, const T5Buckets& t5) {
  // mesh_tensorflow's _relative_position_bucket: n = query - key.
  uint32_t buckets = t5_half_buckets(t5), bucket = 0;
  int64_t n = -relative;
  if (t5.bidirectional) {
    if (n < 0) bucket = buckets;  // keys after the query take the upper half
    n = n < 0 ? -n : n;
  } else {
    n = std::max<int64_t>(n, 0);
  }
  const uint32_t max_exact = buckets / 2;
  if (n < max_exact) return bucket + static_cast<uint32_t>(n);
  // In float32, as the reference computes it (its log, then / log(..) cast
  // to float32, then * (buckets - max_exact), truncated): exact powers of two
  // land on bucket boundaries, where any other rounding would step aside.
  const float large = std::log(static_cast<float>(n) / static_cast<float>(max_exact)) /
                      static_cast<float>(std::log(static_cast<double>(t5.max_distance) / max_exact)) *
                      static_cast<float>(buckets - max_exact);
  return bucket + std::min(max_exact + static_cast<uint32_t>(large), buckets - 1);
}

Result<std::vector<uint32_t>> t5_bucket_table(const T5Buckets& t5) {
  const int64_t R = t5.max_distance;
  std::vector<uint32_t> table;
  for (int64_t r = -R; r <= R; ++r) table.push_back(t5_bucket(r, t5));
  // From max_distance on, the real-valued bucket is past the last one, so
  // no float32 rounding can bring it back: the ends stand for every farther key.
  const uint32_t last = t5_half_buckets(t5) - 1;
  ATTENDRE_REQUIRE(table.back() == (t5.bidirectional ? 2 * last + 1 : 0) && table.front() == last,
          "t5 buckets do not saturate at max_distance");
  return table;
}

double logit_bias(const RetrievalConfig& retrieval, uint32_t h, uint32_t heads_q, int64_t p_query, int64_t p_key) {
  switch (retrieval.bias) {
    case BiasKind::none: return 0.0;
    case BiasKind::alibi: return -alibi_slope(h, heads_q) * std::abs(static_cast<double>(p_query - p_key));
    case BiasKind::t5: return retrieval.t5.table[size_t{t5_bucket(p_key - p_query, retrieval.t5)} * heads_q + h];
  }
  return 0.0;
}

int64_t lm_infinite_distance(int64_t distance, uint32_t n_local, bool sink) {
  const int64_t cap = n_local;
  if (distance >= -cap && distance <= cap) return distance;
  return sink || distance > 0 ? cap : -cap;
}

}  // namespace attendre::positions
