// IEEE binary16 <-> binary32 conversion on the host (fp16 weights, fp16 memories):
// round to nearest, ties to even; overflow to infinity; subnormals kept;
// NaN stays NaN (quiet, payload truncated).
//
// fp16 to fp32 is exact and is GLM's unpackHalf1x16. fp32 to fp16 stays
// written here: GLM's packHalf1x16 rounds a tie away from zero (OpenEXR's
// "round 0.5 up"), which differs from IEEE nearest-even, the rounding every
// fp16 writer among the shaders implements (shaders/half_bits.glsl), on the
// 31744 floats that lie exactly halfway between two halves, and it keeps a
// signalling NaN signalling where every NaN is quieted here (README "Kernels
// and their limits").
#pragma once

#include <attendre/config.hpp>

#include <glm/gtc/packing.hpp>

#include <bit>
#include <cstdint>
#include <span>
#include <vector>

namespace attendre::half {

inline uint16_t float_to_half(float value) {
  const uint32_t f = std::bit_cast<uint32_t>(value);
  const uint32_t sign = (f >> 16) & 0x8000u;
  const uint32_t exponent = (f >> 23) & 0xFFu;
  uint32_t mantissa = f & 0x7FFFFFu;
  if (exponent == 0xFFu)  // infinity or NaN
    return static_cast<uint16_t>(sign | 0x7C00u | (mantissa ? 0x200u | (mantissa >> 13) : 0u));
  const int32_t e = static_cast<int32_t>(exponent) - 127 + 15;  // biased half exponent
  if (e >= 31) return static_cast<uint16_t>(sign | 0x7C00u);    // overflow
  uint32_t shift = 13;  // mantissa bits dropped
  if (e <= 0) {         // subnormal half (or zero): make the implicit bit explicit
    if (e < -10) return static_cast<uint16_t>(sign);  // below half the smallest subnormal
    mantissa |= 0x800000u;
    shift = static_cast<uint32_t>(14 - e);
  }
  uint32_t half = mantissa >> shift;
  const uint32_t rest = mantissa & ((1u << shift) - 1u), halfway = 1u << (shift - 1);
  if (rest > halfway || (rest == halfway && (half & 1u))) ++half;  // may carry into the exponent: still right
  if (e > 0) half += static_cast<uint32_t>(e) << 10;
  return static_cast<uint16_t>(sign | half);
}

// Exactly GLSL's unpackHalf2x16 of one half, as GLM defines it (GLM mirrors
// GLSL's builtins; every one of the 65536 halves gives the same bits as the
// hand-written conversion this replaced, NaN payloads included).
inline float half_to_float(uint16_t h) { return glm::unpackHalf1x16(h); }

// An element as an fp16 memory stores it (MemoryStorage::f16), exactly as
// the kernels do (shaders/half_bits.glsl, half_bits): the fp32 value
// rounded to nearest even, an fp16 subnormal flushed to signed zero (GPUs
// may flush them on load, so none is ever stored).
inline uint16_t to_stored_half(float value) {
  const uint16_t h = float_to_half(value);
  return (h & 0x7C00u) == 0 ? static_cast<uint16_t>(h & 0x8000u) : h;
}

// A float64 value as a memory of `storage` holds it: itself in fp32 storage
// (the reference computes in float64), the fp32-then-fp16 rounding in fp16.
inline double stored_value(double value, MemoryStorage storage) {
  return storage == MemoryStorage::f16 ? half_to_float(to_stored_half(static_cast<float>(value))) : value;
}

inline std::vector<uint16_t> to_half(std::span<const float> values) {
  std::vector<uint16_t> out(values.size());
  for (size_t i = 0; i < values.size(); ++i) out[i] = float_to_half(values[i]);
  return out;
}

inline std::vector<float> from_half(std::span<const uint16_t> values) {
  std::vector<float> out(values.size());
  for (size_t i = 0; i < values.size(); ++i) out[i] = half_to_float(values[i]);
  return out;
}

}  // namespace attendre::half
