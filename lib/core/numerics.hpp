// How attendre keeps fp32 device arithmetic finite and the float64
// reference in step with it (docs/spec-notes.md, "Numerics"):
//  - inputs whose logits or outputs could overflow fp32 are refused up front
//    (input_limits below), so finite inputs give finite results;
//  - subnormal fp32 inputs are read as zero by every backend (many GPUs flush
//    them; the reference does so explicitly);
//  - an attention-based initial score is clamped to the fp32 range;
//  - a non-finite value computed anyway is an error in the same words on
//    every backend (non_finite below).
#pragma once

#include <attendre/config.hpp>
#include <attendre/status.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

namespace attendre::numerics {

inline constexpr double kFloatMax = std::numeric_limits<float>::max();          // 3.4e38
inline constexpr double kFloatMinNormal = std::numeric_limits<float>::min();    // 1.2e-38

// The largest |scale * dot(q_h, k_g)| the inputs may reach (bounded through
// |q_h| * |k_g| by Cauchy-Schwarz, so that every partial sum of the dot
// product is bounded too), and the largest |value| element: 2^126, half the
// fp32 range, leaves room for biases and rounding in the sums.
inline constexpr double kMaxLogit = kMaxLogitMagnitude;
inline constexpr double kMaxValue = kMaxValueMagnitude;

// x as every backend reads an fp32 input: subnormals become (signed) zero.
inline float flush_subnormal(float x) {
  return std::fpclassify(x) == FP_SUBNORMAL ? std::copysign(0.0f, x) : x;
}

// Whether a float64 parameter survives the conversion to fp32 the device
// does: zero, or a normal fp32 magnitude.
inline bool fits_float32(double x) {
  const double a = std::abs(x);
  return std::isfinite(x) && (a == 0.0 || (a >= kFloatMinNormal && a <= kFloatMax));
}

// An initial score mu - k * sigma as the device stores it: within fp32.
inline double clamp_to_float32(double x) { return std::fmin(std::fmax(x, -kFloatMax), kFloatMax); }

// The numerical error of NaN or infinity found in `stage` ("the logits") of
// `step` ("step 3"): the device's finite checks and the reference alike.
inline Status non_finite(const std::string& step, const std::string& stage) {
  return {ErrorCode::numerical_error, step + ": non-finite values (NaN or infinity) in " + stage};
}

}  // namespace attendre::numerics
