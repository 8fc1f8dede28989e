// The host references the block kernels are checked against (no Vulkan):
// fp16 conversion, against exact values, every half and GLM's GLSL
// builtins, and the float64 ops against hand-computed values.
#include "block_harness.hpp"
#include "core/positions.hpp"

#include <glm/gtc/packing.hpp>
#include <doctest/doctest.h>

using namespace attendre;
using namespace attendre::test::block;

TEST_CASE("block reference: fp16 conversion rounds to nearest even and round-trips every half") {
  using half::float_to_half;
  using half::half_to_float;
  for (uint32_t h = 0; h < 0x10000u; ++h) {
    const uint16_t bits = static_cast<uint16_t>(h);
    const float f = half_to_float(bits);
    if (std::isnan(f)) {
      CHECK(std::isnan(half_to_float(float_to_half(f))));
    } else if (float_to_half(f) != bits) {
      FAIL("half 0x" << std::hex << h << " does not round-trip");
    }
  }
  CHECK(float_to_half(1.0f) == 0x3C00);
  CHECK(float_to_half(-2.0f) == 0xC000);
  CHECK(float_to_half(-0.0f) == 0x8000);
  CHECK(float_to_half(65504.0f) == 0x7BFF);
  CHECK(float_to_half(65519.0f) == 0x7BFF);
  CHECK(float_to_half(65520.0f) == 0x7C00);  // the tie rounds to even: infinity
  CHECK(float_to_half(1e9f) == 0x7C00);
  CHECK(float_to_half(-std::numeric_limits<float>::infinity()) == 0xFC00);
  CHECK(float_to_half(1.0f + 0x1p-11f) == 0x3C00);         // tie, even stays
  CHECK(float_to_half(1.0f + 3 * 0x1p-11f) == 0x3C02);     // tie, odd rounds up
  CHECK(float_to_half(1.0f + 0x1p-11f + 0x1p-20f) == 0x3C01);
  CHECK(float_to_half(0x1p-24f) == 0x0001);                // smallest subnormal
  CHECK(float_to_half(0x1p-25f) == 0x0000);                // tie to even: zero
  CHECK(float_to_half(0x1.8p-25f) == 0x0001);
  CHECK(float_to_half(0x1.ff8p-15f) == 0x03FF);            // largest subnormal
  CHECK(float_to_half(0x1.ffcp-15f) == 0x0400);            // tie past it rounds up into the normals
  CHECK(float_to_half(1e-10f) == 0x0000);
  CHECK(half_to_float(0x0001) == 0x1p-24f);
  CHECK(half_to_float(0x7BFF) == 65504.0f);
  const uint16_t nan = float_to_half(std::numeric_limits<float>::quiet_NaN());
  CHECK(((nan & 0x7C00) == 0x7C00 && (nan & 0x3FF) != 0));
  // Random floats: the nearest half (either neighbour is no closer).
  std::mt19937_64 rng(7007);
  std::uniform_real_distribution<float> mantissa(-1.0f, 1.0f);
  std::uniform_int_distribution<int> exponent(-26, 16);
  for (int i = 0; i < 20000; ++i) {
    const float f = std::ldexp(mantissa(rng), exponent(rng));
    const uint16_t h = float_to_half(f);
    const double error = std::abs(static_cast<double>(half_to_float(h)) - f);
    for (int step : {-1, 1}) {
      const uint16_t other = static_cast<uint16_t>(h + step);
      if ((other & 0x7C00) == 0x7C00 || ((other ^ h) & 0x8000)) continue;  // past infinity or the sign
      if (!(error <= std::abs(static_cast<double>(half_to_float(other)) - f)))
        FAIL("float " << f << " rounds to 0x" << std::hex << h << " but 0x" << other << " is nearer");
    }
  }
}

// GLM mirrors GLSL's builtins; its packHalf1x16 rounds a tie away from zero,
// where the shaders and half::float_to_half round it to even. At every
// midpoint between two neighbouring finite halves (both signs) the two must
// differ exactly when the nearer-to-zero neighbour is even, and agree one
// float either side of it: a float_to_half that rounded like GLM, or that
// missed a tie, fails here.
TEST_CASE("block reference: fp16 rounding differs from GLM's packHalf1x16 exactly at the ties, which go to even") {
  uint32_t ties_differing = 0;
  for (uint16_t sign : {uint16_t{0}, uint16_t{0x8000}}) {
    for (uint16_t low = 0; low < 0x7BFF; ++low) {  // low .. low + 1 up to 65504 (the tie past it is infinity)
      const uint16_t lower = sign | low, upper = sign | static_cast<uint16_t>(low + 1);
      const double a = half::half_to_float(lower), b = half::half_to_float(upper);
      const float tie = static_cast<float>((a + b) / 2);  // exact: a float has 13 more mantissa bits
      REQUIRE(static_cast<double>(tie) == (a + b) / 2);
      const uint16_t even = (low & 1u) == 0 ? lower : upper;
      CHECK(half::float_to_half(tie) == even);
      CHECK(glm::packHalf1x16(tie) == upper);
      ties_differing += half::float_to_half(tie) != glm::packHalf1x16(tie);
      for (const float beside : {std::nextafter(tie, 0.0f), std::nextafter(tie, std::copysign(1e30f, tie))})
        if (half::float_to_half(beside) != glm::packHalf1x16(beside))
          FAIL("0x" << std::hex << std::bit_cast<uint32_t>(beside) << " beside a tie rounds differently");
    }
  }
  CHECK(ties_differing == 2u * 15872u);  // the even lower neighbours among 0x0000..0x7BFE, per sign
  // NaN: attendre quiets it; GLM keeps the payload's top bits, signalling or not.
  const float signalling = std::bit_cast<float>(0x7F800001u);
  CHECK((half::float_to_half(signalling) & 0x200u) != 0);
  CHECK((glm::packHalf1x16(signalling) & 0x200u) == 0);
}

TEST_CASE("block reference: ops agree with hand-computed values") {
  const double a[] = {1.0, 2.0, 3.0, -1.0, 0.5, 2.0};  // 2 x 3
  const double w[] = {1.0, 0.0, -1.0, 2.0, 1.0, 0.0};  // 2 x 3
  const double bias[] = {0.5, -0.5}, residual[] = {1.0, 2.0, 3.0, 4.0};
  CHECK(ops::matmul(a, w, 2, 3, 2) == std::vector<double>{-2.0, 4.0, -3.0, -1.5});
  CHECK(ops::matmul(a, w, 2, 3, 2, bias, residual) == std::vector<double>{-0.5, 5.5, 0.5, 2.0});
  const double x[] = {1.0, 2.0, 3.0}, ones[] = {1.0, 1.0, 1.0}, zeros[] = {0.0, 0.0, 0.0};
  const std::vector<double> ln = ops::layer_norm(x, 3, ones, zeros, 0.0);
  CHECK(ln[0] == doctest::Approx(-std::sqrt(1.5)));
  CHECK(ln[1] == doctest::Approx(0.0));
  const std::vector<double> rms = ops::rms_norm(x, 3, ones, 0.0);
  CHECK(rms[2] == doctest::Approx(3.0 / std::sqrt(14.0 / 3.0)));
  CHECK(ops::activate(ActivationKind::silu, 1.0) == doctest::Approx(0.7310585786300049));
  CHECK(ops::activate(ActivationKind::gelu_tanh, 1.0) == doctest::Approx(0.8411919906082768));
  CHECK(ops::activate(ActivationKind::gelu_tanh, -3.0) == doctest::Approx(-0.0036373920817729943));
  CHECK(ops::activate(ActivationKind::relu, -2.0) == 0.0);
  // Position 1, theta 100, rope_dims 4: pair 0 turns by 1 rad, pair 1 by 0.1 rad.
  const double v[] = {1.0, 0.0, 1.0, 0.0};
  const int64_t one[] = {1};
  CHECK(positions::rope_frequencies(100.0, 4, {}).value_or_throw() == std::vector<double>{1.0, 0.1});
  const positions::RopeAngles frequencies = positions::rope_angles(100.0, 4, {}).value_or_throw();  // theta 100
  CHECK(frequencies.theta_scale == 0.1f);
  const std::vector<double> normal = ops::rope(v, one, 1, 4, 4, frequencies, RopeLayout::normal);
  CHECK(normal[0] == doctest::Approx(std::cos(1.0)));
  CHECK(normal[1] == doctest::Approx(std::sin(1.0)));
  CHECK(normal[3] == doctest::Approx(std::sin(0.1)));
  const double u[] = {1.0, 0.0, 0.0, 0.0};
  const std::vector<double> neox = ops::rope(u, one, 1, 4, 4, frequencies, RopeLayout::neox);  // pairs (0,2), (1,3)
  CHECK(neox[0] == doctest::Approx(std::cos(1.0)));
  CHECK(neox[2] == doctest::Approx(std::sin(1.0)));
  const double table[] = {1.0, 2.0, 3.0, 4.0};
  const uint32_t ids[] = {1, 2, 0};
  CHECK(ops::embedding(table, 2, ids) == std::vector<double>{3.0, 4.0, 0.0, 0.0, 1.0, 2.0});
}
