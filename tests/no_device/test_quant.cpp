// The reference codecs: quantize -> dequantize round trips within each type's
// bound on random data of several shapes and distributions, a check that the
// bound comparison rejects a wrong layout, hand-built blocks decoded to known
// values, bf16 rounding, and the refusals.
#include "gguf_test_support.hpp"
#include "gguf/quant.hpp"

#include <array>
#include <bit>
#include <cstring>
#include <cmath>
#include <functional>

namespace gguf = attendre::gguf;
using attendre::ErrorCode;
using attendre::test::check_error;
using attendre::test::check_failure;
using gguf::TensorType;

namespace {

// Error bounds, as multiples of the largest magnitude A of the value's block
// (32 values; the 256-value super-block for the K-quants), plus an absolute
// floor: scales stored as fp16 lose their relative precision below 2^-14, where
// rounding is to multiples of 2^-24, so each level multiplying a scale may be
// off by 2^-25 of it whatever A is (llama.cpp's files have the same floor).
//
// The legacy types' bounds are exact, from how they quantize (d rounded to
// fp16 adds its relative error 2^-11 times the largest level):
//   Q8_0: d = A/127, levels rounded: d/2.
//   Q4_0: d = extreme/-8; the extreme's opposite clamps to level 15, one step
//         off: A/8.  Q5_0 likewise: A/16.
//   Q4_1: d = range/15, levels rounded: range/30 <= A/15, plus the fp16 error
//         of the minimum (<= A 2^-11).  Q5_1: A/31.
// The K-quants fit each sub-block by weighted least squares, which trades the
// extremes' error for the bulk's, so their bound is 1.5 nominal steps of the
// super-block's range: 2A/15, 2A/31 for Q4_K, Q5_K; A/32 for Q6_K.
// The RMS error must stay within 1.25 x the ideal uniform quantizer's,
// nominal step / sqrt(12), over the same normalization.
struct Bound {
  uint32_t block;    // values sharing A
  double max_error;  // x A
  double step;       // nominal step, x A
  double floor;      // absolute, from fp16 scales below the normal range
};

Bound bound_of(TensorType type) {
  const double fp16 = 0x1p-11, sub = 0x1p-25;
  switch (type) {
    case TensorType::q8_0: return {32, (0.5 / 127 + fp16) * 1.001, 1.0 / 127, 127 * sub};
    case TensorType::q4_0: return {32, (1.0 / 8 + fp16) * 1.001, 1.0 / 8, 8 * sub};
    case TensorType::q5_0: return {32, (1.0 / 16 + fp16) * 1.001, 1.0 / 16, 16 * sub};
    case TensorType::q4_1: return {32, (1.0 / 15 + 3 * fp16) * 1.001, 2.0 / 15, 16 * sub};
    case TensorType::q5_1: return {32, (1.0 / 31 + 3 * fp16) * 1.001, 2.0 / 31, 32 * sub};
    case TensorType::q4_k: return {256, 1.5 * 2.0 / 15, 2.0 / 15, (15 + 1) * 63 * sub};
    case TensorType::q5_k: return {256, 1.5 * 2.0 / 31, 2.0 / 31, (31 + 1) * 63 * sub};
    case TensorType::q6_k: return {256, 1.5 / 32, 1.0 / 32, 32 * 128 * sub};
    default: FAIL("no bound for " << gguf::to_string(type)); return {};
  }
}

const TensorType kQuantized[] = {TensorType::q8_0, TensorType::q4_0, TensorType::q4_1, TensorType::q5_0,
                                 TensorType::q5_1, TensorType::q4_k, TensorType::q5_k, TensorType::q6_k};

struct Comparison {
  double worst = 0;  // largest error / bound; above 1 is a failure
  double rms_ratio = 0;  // RMS error / (1.25 x the ideal RMS); above 1 is a failure
};

Comparison compare(TensorType type, std::span<const float> in, std::span<const double> out) {
  const Bound bound = bound_of(type);
  Comparison result;
  double error2 = 0, scale2 = 0;
  for (size_t b = 0; b < in.size(); b += bound.block) {
    double amax = 0;
    for (size_t i = b; i < b + bound.block; ++i) amax = std::max(amax, std::fabs(double{in[i]}));
    for (size_t i = b; i < b + bound.block; ++i) {
      const double error = std::fabs(out[i] - in[i]);
      if (amax == 0) result.worst = std::max(result.worst, error == 0 ? 0.0 : 2.0);
      else result.worst = std::max(result.worst, error / (bound.max_error * amax + bound.floor));
      error2 += error * error;
      scale2 += amax * amax;
    }
  }
  if (scale2 > 0) result.rms_ratio = std::sqrt(error2 / scale2) / (1.25 * bound.step / std::sqrt(12.0));
  return result;
}

using Generator = std::function<float(std::mt19937_64&)>;

std::vector<float> generate(size_t count, uint64_t seed, const Generator& next) {
  std::mt19937_64 rng(seed);
  std::vector<float> out(count);
  for (float& v : out) v = next(rng);
  return out;
}

}  // namespace

TEST_CASE("quant round trips stay within each type's bound") {
  struct Distribution {
    const char* name;
    Generator next;
  };
  const Distribution distributions[] = {
      {"normal", [](std::mt19937_64& r) { return std::normal_distribution<float>(0, 1)(r); }},
      {"uniform", [](std::mt19937_64& r) { return std::uniform_real_distribution<float>(-1, 1)(r); }},
      {"heavy-tailed", [](std::mt19937_64& r) { return std::student_t_distribution<float>(2)(r); }},
      {"positive offset", [](std::mt19937_64& r) { return 3 + std::uniform_real_distribution<float>(0, 1)(r); }},
      {"negative offset", [](std::mt19937_64& r) { return -5 + std::normal_distribution<float>(0, 0.5f)(r); }},
      {"tiny", [](std::mt19937_64& r) { return 1e-3f * std::normal_distribution<float>(0, 1)(r); }},
      {"large", [](std::mt19937_64& r) { return 500 * std::normal_distribution<float>(0, 1)(r); }},
  };
  uint64_t seed = 100;
  for (const TensorType type : kQuantized) {
    const uint32_t block = gguf::block_size(type)->elements;
    // Odd row counts of rows of a few blocks, and one tensor of many blocks.
    for (const auto& [rows, blocks_per_row] : {std::pair{1, 1}, std::pair{3, 2}, std::pair{7, 3}, std::pair{1, 4096 * 32 / 256}}) {
      for (const Distribution& distribution : distributions) {
        CAPTURE(gguf::to_string(type));
        CAPTURE(std::string(distribution.name));
        CAPTURE(rows);
        const auto in = generate(size_t(rows) * blocks_per_row * block, ++seed, distribution.next);
        const auto blocks = gguf::quantize(type, in).value_or_throw();
        CHECK(blocks.size() == in.size() / block * gguf::block_size(type)->bytes);
        const auto out = gguf::dequantize(type, blocks).value_or_throw();
        const Comparison result = compare(type, in, out);
        CHECK(result.worst <= 1.0);
        CHECK(result.rms_ratio <= 1.0);
      }
    }
  }
}

TEST_CASE("quant round trips of the float types") {
  const auto in = attendre::test::random_floats(1001, 7, 10.0f);  // any length: one value per "block"
  const auto f32 = gguf::dequantize(TensorType::f32, gguf::quantize(TensorType::f32, in).value_or_throw()).value_or_throw();
  const auto f16 = gguf::dequantize(TensorType::f16, gguf::quantize(TensorType::f16, in).value_or_throw()).value_or_throw();
  const auto bf16 = gguf::dequantize(TensorType::bf16, gguf::quantize(TensorType::bf16, in).value_or_throw()).value_or_throw();
  for (size_t i = 0; i < in.size(); ++i) {
    CHECK(f32[i] == in[i]);
    CHECK(std::fabs(f16[i] - in[i]) <= std::fabs(in[i]) * 0x1p-11 + 0x1p-25);
    CHECK(std::fabs(bf16[i] - in[i]) <= std::fabs(in[i]) * 0x1p-8);
  }
}

TEST_CASE("quant special blocks: zeros, constants, one spike") {
  for (const TensorType type : kQuantized) {
    CAPTURE(gguf::to_string(type));
    const uint32_t block = gguf::block_size(type)->elements;
    const std::vector<float> zeros(2 * block, 0.0f);
    for (const double v : gguf::dequantize(type, gguf::quantize(type, zeros).value_or_throw()).value_or_throw()) CHECK(v == 0.0);
    for (const float constant : {1.0f, -2.5f, 1e-4f}) {
      const std::vector<float> flat(block, constant);
      CHECK(compare(type, flat, gguf::dequantize(type, gguf::quantize(type, flat).value_or_throw()).value_or_throw()).worst <= 1.0);
    }
    std::vector<float> spike(block, 0.0f);
    spike[block / 2 + 3] = 7.0f;
    const auto out = gguf::dequantize(type, gguf::quantize(type, spike).value_or_throw()).value_or_throw();
    CHECK(compare(type, spike, out).worst <= 1.0);
    CHECK(out[block / 2 + 3] == doctest::Approx(7.0).epsilon(0.02));
  }
}

TEST_CASE("quant comparison rejects a wrong layout") {
  const auto in = attendre::test::random_floats(8 * 256, 11);
  const auto swap_nibbles = [](std::vector<std::byte>& blocks, size_t block_bytes, size_t first, size_t count) {
    for (size_t b = 0; b < blocks.size(); b += block_bytes)
      for (size_t i = b + first; i < b + first + count; ++i)
        blocks[i] = std::byte((static_cast<uint8_t>(blocks[i]) >> 4) | (static_cast<uint8_t>(blocks[i]) << 4));
  };
  struct Case {
    TensorType type;
    size_t first, count;  // the bytes whose nibbles are swapped: element j and j + 16 (or + 32) trade places
  };
  for (const Case c : {Case{TensorType::q4_0, 2, 16}, Case{TensorType::q5_1, 8, 16}, Case{TensorType::q4_k, 16, 128},
                       Case{TensorType::q6_k, 0, 128}}) {
    CAPTURE(gguf::to_string(c.type));
    auto blocks = gguf::quantize(c.type, in).value_or_throw();
    CHECK(compare(c.type, in, gguf::dequantize(c.type, blocks).value_or_throw()).worst <= 1.0);
    swap_nibbles(blocks, gguf::block_size(c.type)->bytes, c.first, c.count);
    const Comparison wrong = compare(c.type, in, gguf::dequantize(c.type, blocks).value_or_throw());
    CHECK(wrong.worst > 2.0);
    CHECK(wrong.rms_ratio > 2.0);
  }
  // Q5_0 with its fifth bits in reverse order.
  auto blocks = gguf::quantize(TensorType::q5_0, in).value_or_throw();
  for (size_t b = 0; b < blocks.size(); b += 22) {
    uint32_t high, reversed = 0;
    std::memcpy(&high, &blocks[b + 2], 4);
    for (int i = 0; i < 32; ++i) reversed |= ((high >> i) & 1u) << (31 - i);
    std::memcpy(&blocks[b + 2], &reversed, 4);
  }
  CHECK(compare(TensorType::q5_0, in, gguf::dequantize(TensorType::q5_0, blocks).value_or_throw()).worst > 2.0);
}

TEST_CASE("quant hand-built blocks decode to known values") {
  // fp16 bit patterns: 1.0 = 0x3C00, 0.5 = 0x3800, 2.0 = 0x4000, -1.0 = 0xBC00.
  const auto bytes = [](std::initializer_list<int> values) {
    std::vector<std::byte> out;
    for (const int v : values) out.push_back(std::byte(static_cast<uint8_t>(v)));
    return out;
  };
  SUBCASE("Q4_0: low nibbles are elements 0-15, high nibbles 16-31, zero point 8") {
    auto block = bytes({0x00, 0x38});  // d = 0.5
    for (int j = 0; j < 16; ++j) block.push_back(std::byte(static_cast<uint8_t>(j | ((15 - j) << 4))));
    const auto out = gguf::dequantize(TensorType::q4_0, block).value_or_throw();
    for (int j = 0; j < 16; ++j) {
      CHECK(out[j] == 0.5 * (j - 8));
      CHECK(out[j + 16] == 0.5 * (7 - j));
    }
  }
  SUBCASE("Q5_0: bit i of qh is element i's fifth bit, zero point 16") {
    auto block = bytes({0x00, 0x3C, 0x01, 0x00, 0x01, 0x80});  // d = 1; qh = 0x80010001: elements 0, 16, 31
    for (int j = 0; j < 16; ++j) block.push_back(std::byte{0x00});
    const auto out = gguf::dequantize(TensorType::q5_0, block).value_or_throw();
    CHECK(out[0] == 0.0);    // 16 - 16
    CHECK(out[1] == -16.0);  // 0 - 16
    CHECK(out[16] == 0.0);
    CHECK(out[31] == 0.0);
    CHECK(out[30] == -16.0);
  }
  SUBCASE("Q4_K: 6-bit scales and mins, the high ones split across bytes") {
    // d = 1, dmin = 0.5. Sub-block 0: sc = 1 | top bits of byte 0 (01) are sc_4's bits 4-5;
    // byte 4 = m_0 = 3 with top bits 10 for m_4. Sub-block 4: sc = 0x2 | 1 << 4 = 18,
    // m = 0x1 | 2 << 4 = 33 (byte 8 = 0x12).
    auto block = bytes({0x00, 0x3C, 0x00, 0x38, 0x41, 2, 3, 4, 0x83, 6, 7, 8, 0x12, 0x00, 0x00, 0x00});
    for (int i = 0; i < 128; ++i) block.push_back(std::byte(static_cast<uint8_t>(0x5A)));  // low 0xA, high 0x5
    const auto out = gguf::dequantize(TensorType::q4_k, block).value_or_throw();
    CHECK(out[0] == 1.0 * 1 * 0xA - 0.5 * 3);      // sub-block 0, low nibble
    CHECK(out[32] == 1.0 * 2 * 0x5 - 0.5 * 6);     // sub-block 1 (sc 2, m 6), high nibble
    CHECK(out[128] == 1.0 * 18 * 0xA - 0.5 * 33);  // sub-block 4, low nibble
    CHECK(out[160] == 0.0 * 0x5 - 0.5 * 0);        // sub-block 5: sc = m = 0
  }
  SUBCASE("Q6_K: 6-bit levels from ql and qh, signed 8-bit scales, zero point 32") {
    std::vector<std::byte> block(210, std::byte{0});
    block[0] = std::byte{0x21};   // values 0 (low nibble 1) and 64 (high nibble 2)
    block[128] = std::byte{0xE4};  // qh[0]: value 0 top bits 00, 32: 01, 64: 10, 96: 11
    block[192] = std::byte{0xFE};  // scale of values 0-15: -2
    block[196] = std::byte{3};     // scale of values 64-79: 3
    block[198] = std::byte{1};     // scale of values 96-111
    block[208] = std::byte{0x00};
    block[209] = std::byte{0x38};  // d = 0.5
    const auto out = gguf::dequantize(TensorType::q6_k, block).value_or_throw();
    CHECK(out[0] == 0.5 * -2 * (1 - 32));
    CHECK(out[64] == 0.5 * 3 * ((2 | 2 << 4) - 32));
    CHECK(out[96] == 0.5 * 1 * ((0 | 3 << 4) - 32));
    CHECK(out[1] == 0.5 * -2 * -32);
  }
}

TEST_CASE("bf16 conversion rounds to nearest even and keeps NaN") {
  const auto bits = [](uint32_t b) { return gguf::float_to_bf16(std::bit_cast<float>(b)); };
  CHECK(gguf::float_to_bf16(1.0f) == 0x3F80);
  CHECK(bits(0x3F808000u) == 0x3F80);  // halfway, even stays
  CHECK(bits(0x3F818000u) == 0x3F82);  // halfway, odd rounds up
  CHECK(bits(0x3F808001u) == 0x3F81);  // above halfway
  CHECK(bits(0x7F7FFFFFu) == 0x7F80);  // the largest float rounds to infinity
  CHECK(bits(0xFF800000u) == 0xFF80);  // -infinity
  CHECK(std::isnan(gguf::bf16_to_float(bits(0x7F800001u))));  // a NaN whose payload sits below bf16's bits
  CHECK(gguf::bf16_to_float(0xC040) == -3.0f);
}

TEST_CASE("quant refusals") {
  const std::vector<float> values(300, 1.0f);
  check_failure(gguf::quantize(TensorType::q4_k, values), ErrorCode::invalid_argument,
              "quantize Q4_K: 300 values are not a whole number of 256-value blocks");
  check_failure(gguf::quantize(TensorType::q8_0, std::span(values).first(33)), ErrorCode::invalid_argument,
              "quantize Q8_0: 33 values are not a whole number of 32-value blocks");
  check_failure(gguf::quantize(TensorType::q2_k, std::span(values).first(256)), ErrorCode::unsupported,
              "quantize: no reference codec for Q2_K");
  check_failure(gguf::dequantize(TensorType::iq4_xs, std::vector<std::byte>(136)), ErrorCode::unsupported,
              "dequantize: no reference codec for IQ4_XS");
  check_failure(gguf::dequantize(static_cast<TensorType>(31), {}), ErrorCode::unsupported, "type 31");
  check_failure(gguf::dequantize(TensorType::q4_0, std::vector<std::byte>(37)), ErrorCode::malformed_input,
              "dequantize Q4_0: 37 bytes are not a whole number of 18-byte blocks");
  std::vector<double> out(31);
  check_failure(gguf::dequantize(TensorType::q4_0, std::vector<std::byte>(18), out), ErrorCode::invalid_argument,
              "dequantize Q4_0: 1 blocks hold 32 values, the output has room for 31");
  std::vector<float> with_nan(32, 0.0f);
  with_nan[3] = std::nanf("");
  check_failure(gguf::quantize(TensorType::q4_0, with_nan), ErrorCode::invalid_argument,
              "quantize Q4_0: value 3 is not finite");
  CHECK(gguf::has_reference_codec(TensorType::q6_k));
  CHECK_FALSE(gguf::has_reference_codec(TensorType::q3_k));
}
