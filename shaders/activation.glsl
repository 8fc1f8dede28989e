// The activation functions (interface/activation.h kinds), shared by
// activation.comp and the gated products of matmul_direct.comp, so that
// both give the same bits:
//   silu(x) = x / (1 + exp(-x))
//   gelu_tanh(x) = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
//               = x / (1 + exp(-2 sqrt(2/pi) (x + 0.044715 x^3)))  (no cancellation)
//   relu(x) = max(x, 0)
// Overflowing exp() gives inf, and x / inf the right limit, 0.
#ifndef ATTENDRE_ACTIVATION_GLSL
#define ATTENDRE_ACTIVATION_GLSL
#include "interface/activation_kinds.h"

float activation_of(uint kind, float x) {
  if (kind == kActSilu) return x / (1.0 + exp(-x));
  if (kind == kActGeluTanh) return x / (1.0 + exp(-1.5957691216 * (x + 0.044715 * x * x * x)));
  return max(x, 0.0);
}

#endif
