// ggml's "legacy" quantizations: blocks of 32 values, one fp16 scale d (and a
// minimum m for the _1 types). In every one, byte j of the nibbles holds
// element j in its low half and element j + 16 in its high half.
//
// The encoders repeat the float arithmetic of ggml's reference quantizers
// (quantize_row_*_ref: levels computed against the unrounded scale, then the
// scale stored as fp16), so that they reproduce llama-quantize's blocks
// byte for byte, which the tests check against the shared Q8_0 and Q4_0 files.
#include "gguf/quant_codecs.hpp"

#include "interface/quant.h"

#include <algorithm>
#include <array>

namespace attendre::gguf::detail {
namespace {

constexpr int kBlock = kernels::kLegacyBlockValues;
constexpr int kHalf = kBlock / 2;

// The extreme of a block, the value of largest magnitude with its sign: the
// symmetric types map it to their most negative level, which has one step
// more room than the positive side.
float signed_extreme(const float* x) {
  float amax = 0, extreme = 0;
  for (int i = 0; i < kBlock; ++i)
    if (std::fabs(x[i]) > amax) {
      amax = std::fabs(x[i]);
      extreme = x[i];
    }
  return extreme;
}

using Levels = std::array<int, kBlock>;

// The levels of a block: (x - subtract) * inverse + rounding, truncated as
// ggml's (int8_t) cast does (`rounding` carries the +0.5 that makes it round
// to nearest, plus the zero point) and clamped to [0, top].
Levels levels(const float* x, float subtract, float inverse, float rounding, int top) {
  Levels out{};
  for (int i = 0; i < kBlock; ++i) out[i] = std::clamp(static_cast<int>((x[i] - subtract) * inverse + rounding), 0, top);
  return out;
}

// The nibbles: byte j holds level j's low 4 bits low and level j + 16's high.
void pack_nibbles(const Levels& q, std::byte* qs) {
  for (int j = 0; j < kHalf; ++j) qs[j] = std::byte(static_cast<uint8_t>((q[j] & 0xF) | ((q[j + kHalf] & 0xF) << 4)));
}

// The Q5 types' fifth bits: bit i of a little-endian uint32 for level i.
void pack_fifth_bits(const Levels& q, std::byte* qh) {
  uint32_t high = 0;
  for (int i = 0; i < kBlock; ++i) high |= static_cast<uint32_t>(q[i] >> 4) << i;
  std::memcpy(qh, &high, 4);
}

// The levels back from the nibbles and, for the Q5 types, the fifth bits.
Levels unpack(const std::byte* qs, const std::byte* qh = nullptr) {
  uint32_t high = 0;
  if (qh) std::memcpy(&high, qh, 4);
  Levels q{};
  for (int j = 0; j < kHalf; ++j) {
    q[j] = byte_at(qs, j) & 0xF;
    q[j + kHalf] = byte_at(qs, j) >> 4;
  }
  for (int i = 0; i < kBlock; ++i) q[i] += static_cast<int>((high >> i) & 1u) << 4;
  return q;
}

// The _1 types' scale and minimum: d spans the block's range in `top` steps.
struct RangeScale {
  float d, min, inverse;
};
RangeScale range_scale(const float* x, int top) {
  float min = x[0], max = x[0];
  for (int i = 1; i < kBlock; ++i) {
    min = std::min(min, x[i]);
    max = std::max(max, x[i]);
  }
  const float d = (max - min) / static_cast<float>(top);
  return {d, min, d != 0 ? 1.0f / d : 0.0f};
}

// ---- Q4_0: { fp16 d; uint8 qs[16] } = 18 bytes. x = d * (q - 8), q in [0, 15].
void decode_q4_0(const std::byte* block, double* out) {
  const double d = load_half(block);
  const Levels q = unpack(block + 2);
  for (int i = 0; i < kBlock; ++i) out[i] = d * (q[i] - 8);
}
void encode_q4_0(const float* x, std::byte* block) {
  const float d = signed_extreme(x) / -8.0f;
  store_half(block, d);
  pack_nibbles(levels(x, 0.0f, d != 0 ? 1.0f / d : 0.0f, 8.5f, 15), block + 2);
}

// ---- Q4_1: { fp16 d; fp16 m; uint8 qs[16] } = 20 bytes. x = d * q + m, q in [0, 15].
void decode_q4_1(const std::byte* block, double* out) {
  const double d = load_half(block), m = load_half(block + 2);
  const Levels q = unpack(block + 4);
  for (int i = 0; i < kBlock; ++i) out[i] = d * q[i] + m;
}
void encode_q4_1(const float* x, std::byte* block) {
  const RangeScale s = range_scale(x, 15);
  store_half(block, s.d);
  store_half(block + 2, s.min);
  pack_nibbles(levels(x, s.min, s.inverse, 0.5f, 15), block + 4);
}

// ---- Q5_0: { fp16 d; uint8 qh[4]; uint8 qs[16] } = 22 bytes. x = d * (q - 16),
// q in [0, 31]: its low 4 bits in the nibbles, its fifth bit in bit i of the
// little-endian uint32 qh for element i.
void decode_q5_0(const std::byte* block, double* out) {
  const double d = load_half(block);
  const Levels q = unpack(block + 6, block + 2);
  for (int i = 0; i < kBlock; ++i) out[i] = d * (q[i] - 16);
}
void encode_q5_0(const float* x, std::byte* block) {
  const float d = signed_extreme(x) / -16.0f;
  store_half(block, d);
  const Levels q = levels(x, 0.0f, d != 0 ? 1.0f / d : 0.0f, 16.5f, 31);
  pack_fifth_bits(q, block + 2);
  pack_nibbles(q, block + 6);
}

// ---- Q5_1: { fp16 d; fp16 m; uint8 qh[4]; uint8 qs[16] } = 24 bytes.
// x = d * q + m, q in [0, 31], bits split as in Q5_0.
void decode_q5_1(const std::byte* block, double* out) {
  const double d = load_half(block), m = load_half(block + 2);
  const Levels q = unpack(block + 8, block + 4);
  for (int i = 0; i < kBlock; ++i) out[i] = d * q[i] + m;
}
void encode_q5_1(const float* x, std::byte* block) {
  const RangeScale s = range_scale(x, 31);
  store_half(block, s.d);
  store_half(block + 2, s.min);
  const Levels q = levels(x, s.min, s.inverse, 0.5f, 31);
  pack_fifth_bits(q, block + 4);
  pack_nibbles(q, block + 8);
}

// ---- Q8_0: { fp16 d; int8 qs[32] } = 34 bytes. x = d * q, q in [-127, 127].
void decode_q8_0(const std::byte* block, double* out) {
  const double d = load_half(block);
  for (int j = 0; j < kBlock; ++j) out[j] = d * static_cast<int8_t>(byte_at(block, 2 + j));
}
void encode_q8_0(const float* x, std::byte* block) {
  float amax = 0;
  for (int j = 0; j < kBlock; ++j) amax = std::max(amax, std::fabs(x[j]));
  const float d = amax / 127.0f;
  const float inverse = d != 0 ? 1.0f / d : 0.0f;
  store_half(block, d);
  for (int j = 0; j < kBlock; ++j) {
    // ggml rounds half away from zero here (roundf), unlike its other quantizers.
    const int q = std::clamp(static_cast<int>(std::round(x[j] * inverse)), -127, 127);
    block[2 + j] = std::byte(static_cast<uint8_t>(static_cast<int8_t>(q)));
  }
}

constexpr BlockCodec kLegacyCodecs[] = {
    {TensorType::q4_0, kBlock, kernels::kQ4_0BlockBytes, decode_q4_0, encode_q4_0},
    {TensorType::q4_1, kBlock, kernels::kQ4_1BlockBytes, decode_q4_1, encode_q4_1},
    {TensorType::q5_0, kBlock, kernels::kQ5_0BlockBytes, decode_q5_0, encode_q5_0},
    {TensorType::q5_1, kBlock, kernels::kQ5_1BlockBytes, decode_q5_1, encode_q5_1},
    {TensorType::q8_0, kBlock, kernels::kQ8_0BlockBytes, decode_q8_0, encode_q8_0},
};

}  // namespace

std::span<const BlockCodec> legacy_codecs() { return kLegacyCodecs; }

}  // namespace attendre::gguf::detail
