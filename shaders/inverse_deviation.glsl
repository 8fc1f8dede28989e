// The normalizing factor of RMSNorm and LayerNorm (norm.comp) and of the
// products that RMS-normalize their A rows on the way in (matmul_direct.comp,
// RMS_IN): 1/sqrt(mean_square), or NaN when the statistic left fp32.
#ifndef ATTENDRE_INVERSE_DEVIATION_GLSL
#define ATTENDRE_INVERSE_DEVIATION_GLSL

// Squares of values past ~1.8e19 sum to infinity, and 1/sqrt(inf) = 0 would
// turn the row into zeros (LayerNorm: its bias) that pass every finite check
// as an answer. NaN rows reach the checks downstream instead (the attention
// outputs and output rows of the block, a stack's final rows and logits),
// which report the step and the block (gpu/finite_checks.hpp).
float inverse_deviation(float mean_square) {
  return isinf(mean_square) || isnan(mean_square) ? uintBitsToFloat(0x7FC00000u) : inversesqrt(mean_square);
}

#endif
