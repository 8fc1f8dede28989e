// ggml's K-quants Q4_K, Q5_K and Q6_K: super-blocks of 256 values split into
// sub-blocks, each with its own quantized scale (and minimum for Q4_K and
// Q5_K), the sub-block scales themselves scaled by fp16 super-block factors.
//
// The quantizers follow ggml's reference approach: fit each sub-block with a
// small search over candidate scales, keeping the weighted least-squares
// refit of smallest error; quantize the sub-block scales against the largest
// one; then requantize the values against the scales as stored.
#include "gguf/quant_codecs.hpp"

#include "interface/quant.h"

#include <algorithm>
#include <array>

namespace attendre::gguf::detail {
namespace {

constexpr int kSuper = kernels::kSuperBlockValues;

// ---- Fits -------------------------------------------------------------------

// x ≈ scale * l - min for levels l in [0, nmax], min >= 0 (the K-quants
// subtract their minimum). Starts from the plain range fit, then tries the
// inverse scales (nmax + rmin + rdelta * i) / range for i in [0, steps]; for
// each, the levels they give are refit by weighted least squares and the fit
// with the smallest weighted squared error is kept.
struct AffineFit {
  float scale = 0, min = 0;
};

AffineFit fit_affine(const float* x, const float* w, int n, int nmax, float rmin, float rdelta, int steps) {
  float lo = x[0], hi = x[0], sum_w = 0, sum_x = 0;
  for (int i = 0; i < n; ++i) {
    lo = std::min(lo, x[i]);
    hi = std::max(hi, x[i]);
    sum_w += w[i];
    sum_x += w[i] * x[i];
  }
  lo = std::min(lo, 0.0f);  // the offset can only subtract: positive blocks keep 0 as their floor
  if (hi == lo) return {0, -lo};
  const auto level = [&](float inverse, float v) { return std::clamp(nearest_int(inverse * (v - lo)), 0, nmax); };
  const auto error = [&](float scale, float offset, float inverse) {
    float sum = 0;
    for (int i = 0; i < n; ++i) {
      const float diff = scale * static_cast<float>(level(inverse, x[i])) + offset - x[i];
      sum += w[i] * diff * diff;
    }
    return sum;
  };
  float best_scale = (hi - lo) / static_cast<float>(nmax), best_offset = lo;
  float best_error = error(best_scale, best_offset, 1.0f / best_scale);
  for (int step = 0; step <= steps; ++step) {
    const float inverse = (rmin + rdelta * static_cast<float>(step) + static_cast<float>(nmax)) / (hi - lo);
    float sum_l = 0, sum_l2 = 0, sum_xl = 0;
    for (int i = 0; i < n; ++i) {
      const auto l = static_cast<float>(level(inverse, x[i]));
      sum_l += w[i] * l;
      sum_l2 += w[i] * l * l;
      sum_xl += w[i] * l * x[i];
    }
    const float det = sum_w * sum_l2 - sum_l * sum_l;
    if (det <= 0) continue;
    float scale = (sum_w * sum_xl - sum_x * sum_l) / det;
    float offset = (sum_l2 * sum_x - sum_l * sum_xl) / det;
    if (offset > 0) {  // a positive offset cannot be stored: refit the scale alone
      offset = 0;
      scale = sum_xl / sum_l2;
    }
    const float e = error(scale, offset, inverse);
    if (e < best_error) {
      best_error = e;
      best_scale = scale;
      best_offset = offset;
    }
  }
  return {best_scale, -best_offset};
}

// x ≈ scale * l for levels l in [-nmax, nmax - 1], the scale signed so that
// the extreme value lands on -nmax (one level more room than +nmax - 1).
// Weights x^2 favour the large values; inverse scales -(nmax + i/10) / extreme
// for i in [-9, 9] are tried and the least-squares scale of the best kept.
float fit_symmetric(const float* x, int n, int nmax) {
  float amax = 0, extreme = 0;
  for (int i = 0; i < n; ++i)
    if (std::fabs(x[i]) > amax) {
      amax = std::fabs(x[i]);
      extreme = x[i];
    }
  if (amax < 1e-15f) return 0;
  float best_scale = 0, best = 0;  // best = sum_xl^2 / sum_l2, the weighted error reduction
  for (int step = -9; step <= 9; ++step) {
    const float inverse = -(static_cast<float>(nmax) + 0.1f * static_cast<float>(step)) / extreme;
    float sum_xl = 0, sum_l2 = 0;
    for (int i = 0; i < n; ++i) {
      const auto l = static_cast<float>(std::clamp(nearest_int(inverse * x[i]), -nmax, nmax - 1));
      const float w = x[i] * x[i];
      sum_xl += w * x[i] * l;
      sum_l2 += w * l * l;
    }
    if (sum_l2 > 0 && sum_xl * sum_xl > best * sum_l2) {
      best_scale = sum_xl / sum_l2;
      best = best_scale * sum_xl;
    }
  }
  return best_scale;
}

// ---- Q4_K and Q5_K share their scales -------------------------------------
//
// 8 sub-blocks of 32, each with a 6-bit scale sc and a 6-bit minimum m, packed
// in 12 bytes: for j < 4, sc_j and m_j are the low 6 bits of bytes j and j + 4;
// for j >= 4, their low 4 bits are the low and high nibbles of byte j + 4 and
// their top 2 bits the top 2 bits of bytes j - 4 (sc) and j (m).
// x = d * sc * q - dmin * m.

void unpack_scale_min(const std::byte* packed, int j, int& sc, int& m) {
  if (j < 4) {
    sc = byte_at(packed, j) & 63;
    m = byte_at(packed, j + 4) & 63;
  } else {
    sc = (byte_at(packed, j + 4) & 0xF) | ((byte_at(packed, j - 4) >> 6) << 4);
    m = (byte_at(packed, j + 4) >> 4) | ((byte_at(packed, j) >> 6) << 4);
  }
}

void pack_scale_min(std::byte* packed, int j, int sc, int m) {
  auto* p = reinterpret_cast<uint8_t*>(packed);
  if (j < 4) {
    p[j] = static_cast<uint8_t>((p[j] & 0xC0) | sc);
    p[j + 4] = static_cast<uint8_t>((p[j + 4] & 0xC0) | m);
  } else {
    p[j + 4] = static_cast<uint8_t>((sc & 0xF) | ((m & 0xF) << 4));
    p[j - 4] = static_cast<uint8_t>(p[j - 4] | ((sc >> 4) << 6));
    p[j] = static_cast<uint8_t>(p[j] | ((m >> 4) << 6));
  }
}

// Fits the 8 sub-blocks, writes d, dmin (bytes 0-3) and the packed scales
// (bytes 4-15), and returns each value's level in [0, nmax] against the
// scales as stored.
std::array<uint8_t, kSuper> encode_scales_and_levels(const float* x, std::byte* block, int nmax, float rmin,
                                                     float rdelta, int steps) {
  std::array<float, 8> scales{}, mins{};
  for (int j = 0; j < 8; ++j) {
    const float* sub = x + 32 * j;
    float sum_x2 = 0;
    for (int l = 0; l < 32; ++l) sum_x2 += sub[l] * sub[l];
    const float rms = std::sqrt(sum_x2 / 32);
    std::array<float, 32> weights{};  // large values and the sub-block's typical size both count
    for (int l = 0; l < 32; ++l) weights[l] = rms + std::fabs(sub[l]);
    const AffineFit fit = fit_affine(sub, weights.data(), 32, nmax, rmin, rdelta, steps);
    scales[j] = std::max(fit.scale, 0.0f);
    mins[j] = fit.min;
  }
  const float max_scale = *std::max_element(scales.begin(), scales.end());
  const float max_min = *std::max_element(mins.begin(), mins.end());
  const float inverse_scale = max_scale > 0 ? 63.0f / max_scale : 0.0f;
  const float inverse_min = max_min > 0 ? 63.0f / max_min : 0.0f;
  for (int j = 0; j < 8; ++j)
    pack_scale_min(block + 4, j, std::min(63, nearest_int(inverse_scale * scales[j])),
                   std::min(63, nearest_int(inverse_min * mins[j])));
  store_half(block, max_scale / 63.0f);
  store_half(block + 2, max_min / 63.0f);
  const double d = load_half(block), dmin = load_half(block + 2);
  std::array<uint8_t, kSuper> levels{};
  for (int j = 0; j < 8; ++j) {
    int sc, m;
    unpack_scale_min(block + 4, j, sc, m);
    const double step = d * sc, offset = dmin * m;
    if (step == 0) continue;  // every value of the sub-block decodes to -offset
    for (int l = 0; l < 32; ++l)
      levels[32 * j + l] = static_cast<uint8_t>(
          std::clamp(static_cast<int>(std::lrint((x[32 * j + l] + offset) / step)), 0, nmax));
  }
  return levels;
}

// ---- Q4_K: { fp16 d; fp16 dmin; uint8 scales[12]; uint8 qs[128] } = 144 bytes.
// Each 64 values (sub-blocks 2c and 2c + 1) share 32 bytes of qs: value
// 64c + l in the low nibble of qs[32c + l], value 64c + 32 + l in its high one.
// ---- Q5_K: { fp16 d; fp16 dmin; uint8 scales[12]; uint8 qh[32]; uint8 qs[128] } = 176 bytes.
// Low 4 bits as in Q4_K; the fifth bit of value 64c + l is bit 2c of qh[l],
// that of value 64c + 32 + l bit 2c + 1.
constexpr int kQhOffset = 16;  // Q5_K's qh, where Q4_K's qs start

template <int kQsOffset, bool kFifthBits>
void decode_with_mins(const std::byte* block, double* out) {
  const double d = load_half(block), dmin = load_half(block + 2);
  for (int c = 0; c < 4; ++c) {
    int sc0, m0, sc1, m1;
    unpack_scale_min(block + 4, 2 * c, sc0, m0);
    unpack_scale_min(block + 4, 2 * c + 1, sc1, m1);
    for (int l = 0; l < 32; ++l) {
      const uint8_t q = byte_at(block, kQsOffset + 32 * c + l);
      const int high = kFifthBits ? byte_at(block, kQhOffset + l) : 0;
      out[64 * c + l] = d * sc0 * ((q & 0xF) | (((high >> (2 * c)) & 1) << 4)) - dmin * m0;
      out[64 * c + 32 + l] = d * sc1 * ((q >> 4) | (((high >> (2 * c + 1)) & 1) << 4)) - dmin * m1;
    }
  }
}

template <int kQsOffset, bool kFifthBits>
void encode_with_mins(const float* x, std::byte* block) {
  // ggml's search parameters: Q4_K tries 21 inverse scales from (nmax - 1) /
  // range in steps of 0.1, Q5_K 16 from (nmax - 0.5) / range.
  const auto levels = kFifthBits ? encode_scales_and_levels(x, block, 31, -0.5f, 0.1f, 15)
                                 : encode_scales_and_levels(x, block, 15, -1.0f, 0.1f, 20);
  for (int c = 0; c < 4; ++c)
    for (int l = 0; l < 32; ++l) {
      const int q0 = levels[64 * c + l], q1 = levels[64 * c + 32 + l];
      block[kQsOffset + 32 * c + l] = std::byte(static_cast<uint8_t>((q0 & 0xF) | ((q1 & 0xF) << 4)));
      if (kFifthBits)
        block[kQhOffset + l] |= std::byte(static_cast<uint8_t>(((q0 >> 4) << (2 * c)) | ((q1 >> 4) << (2 * c + 1))));
    }
}

constexpr auto decode_q4_k = decode_with_mins<16, false>;
constexpr auto encode_q4_k = encode_with_mins<16, false>;
constexpr auto decode_q5_k = decode_with_mins<48, true>;
constexpr auto encode_q5_k = encode_with_mins<48, true>;

// ---- Q6_K: { uint8 ql[128]; uint8 qh[64]; int8 scales[16]; fp16 d } = 210 bytes.
// 16 sub-blocks of 16 values, x = d * scales[i / 16] * (q - 32), q in [0, 63].
// Each 128 values (half h) use ql[64h ...], qh[32h ...]: for l < 32, values
// 128h + l + 32k (k = 0..3) take their low 4 bits from ql[64h + l] (k = 0 low
// nibble, k = 2 high) and ql[64h + 32 + l] (k = 1 low, k = 3 high), and their
// top 2 bits from bits 2k, 2k + 1 of qh[32h + l].
void decode_q6_k(const std::byte* block, double* out) {
  const double d = load_half(block + 208);
  for (int h = 0; h < 2; ++h)
    for (int l = 0; l < 32; ++l) {
      const uint8_t low0 = byte_at(block, 64 * h + l), low1 = byte_at(block, 64 * h + 32 + l);
      const uint8_t high = byte_at(block, 128 + 32 * h + l);
      const int q[4] = {(low0 & 0xF) | ((high & 3) << 4), (low1 & 0xF) | (((high >> 2) & 3) << 4),
                        (low0 >> 4) | (((high >> 4) & 3) << 4), (low1 >> 4) | (((high >> 6) & 3) << 4)};
      for (int k = 0; k < 4; ++k) {
        const int i = 128 * h + 32 * k + l;
        out[i] = d * static_cast<int8_t>(byte_at(block, 192 + i / 16)) * (q[k] - 32);
      }
    }
}
void encode_q6_k(const float* x, std::byte* block) {
  std::array<float, 16> scales{};
  float max_scale = 0;
  for (int s = 0; s < 16; ++s) {
    scales[s] = fit_symmetric(x + 16 * s, 16, 32);
    if (std::fabs(scales[s]) > std::fabs(max_scale)) max_scale = scales[s];
  }
  if (std::fabs(max_scale) < 1e-15f) return;  // all zeros: d = 0 (the block arrives zeroed)
  // The largest sub-block scale becomes -128 (int8's widest level); d keeps its sign.
  const float inverse = -128.0f / max_scale;
  store_half(block + 208, 1.0f / inverse);
  const double d = load_half(block + 208);
  std::array<uint8_t, kSuper> levels{};
  for (int s = 0; s < 16; ++s) {
    const auto sc = static_cast<int8_t>(std::min(127, nearest_int(inverse * scales[s])));
    block[192 + s] = std::byte(static_cast<uint8_t>(sc));
    const double step = d * sc;
    for (int l = 0; l < 16; ++l)
      levels[16 * s + l] = static_cast<uint8_t>(
          32 + (step == 0 ? 0 : std::clamp(static_cast<int>(std::lrint(x[16 * s + l] / step)), -32, 31)));
  }
  for (int h = 0; h < 2; ++h)
    for (int l = 0; l < 32; ++l) {
      const uint8_t* q = &levels[128 * h + l];  // q[32k] is value 128h + 32k + l
      block[64 * h + l] = std::byte(static_cast<uint8_t>((q[0] & 0xF) | ((q[64] & 0xF) << 4)));
      block[64 * h + 32 + l] = std::byte(static_cast<uint8_t>((q[32] & 0xF) | ((q[96] & 0xF) << 4)));
      block[128 + 32 * h + l] =
          std::byte(static_cast<uint8_t>((q[0] >> 4) | ((q[32] >> 4) << 2) | ((q[64] >> 4) << 4) | ((q[96] >> 4) << 6)));
    }
}

constexpr BlockCodec kKCodecs[] = {
    {TensorType::q4_k, kSuper, kernels::kQ4_KBlockBytes, decode_q4_k, encode_q4_k},
    {TensorType::q5_k, kSuper, kernels::kQ5_KBlockBytes, decode_q5_k, encode_q5_k},
    {TensorType::q6_k, kSuper, kernels::kQ6_KBlockBytes, decode_q6_k, encode_q6_k},
};

}  // namespace

std::span<const BlockCodec> k_codecs() { return kKCodecs; }

}  // namespace attendre::gguf::detail
