// Helpers shared by the kernels: buffers are uint arrays (floats travel as
// bits), and sort keys map floats and ints to uints that compare the same way.
#ifndef ATTENDRE_COMMON_GLSL
#define ATTENDRE_COMMON_GLSL

#include "interface/constants.h"

#define NEG_INF uintBitsToFloat(0xFF800000u)
// The largest finite float (FLT_MAX), for clamps that keep results finite.
#define kFloatMax uintBitsToFloat(0x7F7FFFFFu)

// Monotone map float -> uint (a < b  <=>  key(a) < key(b)); -0 counts as +0,
// as it does for the float64 reference.
uint ordered_float(float f) {
  uint u = floatBitsToUint(f == 0.0 ? 0.0 : f);
  return (u & 0x80000000u) != 0u ? ~u : (u | 0x80000000u);
}

uint ordered_int(int i) { return uint(i) ^ 0x80000000u; }

#endif
