// Soft-capping (Gemma 2's attention and final logits): cap * tanh(x / cap),
// x itself for cap = 0. For score.comp, score_direct.comp, flash_attend.comp
// (through score_positions.glsl) and soft_cap.comp.
#ifndef ATTENDRE_SOFT_CAP_GLSL
#define ATTENDRE_SOFT_CAP_GLSL

// tanh without the overflow of (e^2x - 1) / (e^2x + 1), which some drivers
// compute for the builtin (inf / inf = NaN past |x| ~ 44): e^(-2|x|) only
// shrinks. Near 0, where 1 - e^(-2|x|) would cancel, its Taylor series
// (error below x^9 / 45 < 3e-10 relative for |x| < 1/8).
float stable_tanh(float x) {
  const float a = abs(x);
  if (a < 0.125) {
    const float x2 = x * x;
    return x * (1.0 + x2 * (-1.0 / 3.0 + x2 * (2.0 / 15.0 + x2 * (-17.0 / 315.0))));
  }
  const float t = exp(-2.0 * a);
  return sign(x) * ((1.0 - t) / (1.0 + t));
}

float soft_cap(float x, float cap) { return cap == 0.0 ? x : cap * stable_tanh(x / cap); }

#endif
