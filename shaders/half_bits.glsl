// fp16 rounding of fp32 values, as lib/core/half.hpp's to_stored_half does
// it bit for bit: the writers of fp16 memories (stored.glsl) and of fp16
// activations (norm.comp, activation.comp with -DOUTPUT_F16) store whole
// 32-bit words packed by half_pair, so that no device needs 16-bit stores
// and every device rounds as the float64 reference does.
#ifndef ATTENDRE_HALF_BITS_GLSL
#define ATTENDRE_HALF_BITS_GLSL

// fp16 bits of x rounded to nearest even, an fp16 subnormal flushed to
// signed zero: lib/core/half.hpp's to_stored_half, bit for bit. Beyond
// fp16's range: infinity (inputs refused on the host; computed values
// reach the finite checks).
uint half_bits(float x) {
  const uint f = floatBitsToUint(x);
  const uint sign = (f >> 16u) & 0x8000u;
  const int e = int((f >> 23u) & 0xFFu) - 112;  // biased fp16 exponent
  uint mantissa = f & 0x7FFFFFu;
  if (e >= 31) return sign | 0x7C00u;
  uint shift = 13u;  // mantissa bits dropped
  if (e <= 0) {
    if (e < -10) return sign;
    mantissa |= 0x800000u;
    shift = uint(14 - e);
  }
  uint h = mantissa >> shift;
  const uint rest = mantissa & ((1u << shift) - 1u), halfway = 1u << (shift - 1u);
  if (rest > halfway || (rest == halfway && (h & 1u) != 0u)) ++h;  // a carry into the exponent is still right
  if (e > 0) h += uint(e) << 10u;
  return (h & 0x7C00u) == 0u ? sign : sign | h;
}

// Elements 2w and 2w + 1 of a row as word w holds them (the first in the low half).
uint half_pair(float first, float second) { return half_bits(first) | (half_bits(second) << 16u); }

#endif
