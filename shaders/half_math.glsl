// fp16 products with fp32 accumulation (-DHALF_MATH: fp16 activations
// -DINPUT_F16 times fp16 weights -DWEIGHTS_F16, where the device has
// shaderFloat16; the kernel enables GL_EXT_shader_explicit_arithmetic_types_float16).
// Products are taken in fp16 in groups of four consecutive `in` elements,
// dot(f16vec4, f16vec4): the packed fp16 ALU of phone GPUs does two per
// lane-cycle, and one conversion per group replaces two per product. Each
// group's fp16 sum is widened and accumulated in fp32, so the rounding
// stays local to the group: at most ~4 * 2^-11 of the group's sum of
// |a * w| (README "Kernels and their limits", fp16 math).
//   a_group(row, e, end): A elements e..e+3 of the row at word `row`, those
//     at or past `end` zero (input_rows.glsl's a_half);
//   w_group(base, e, end): W elements base+e..base+e+3, those with e+j at or
//     past `end` zero (weights.glsl's weight_half);
//   group_product(a, w): the group's fp16 dot product as a float.
#ifndef ATTENDRE_HALF_MATH_GLSL
#define ATTENDRE_HALF_MATH_GLSL

const float16_t kHalfZero = float16_t(0.0);

f16vec4 a_group(uint row, uint e, uint end) {
  if (e + 4u <= end) return f16vec4(a_half(row, e), a_half(row, e + 1u), a_half(row, e + 2u), a_half(row, e + 3u));
  f16vec4 g = f16vec4(kHalfZero);
  for (uint j = 0u; e + j < end; ++j) g[j] = a_half(row, e + j);
  return g;
}

f16vec4 w_group(uint base, uint e, uint end) {
  if (e + 4u <= end)
    return f16vec4(weight_half(base + e), weight_half(base + e + 1u), weight_half(base + e + 2u),
                   weight_half(base + e + 3u));
  f16vec4 g = f16vec4(kHalfZero);
  for (uint j = 0u; e + j < end; ++j) g[j] = weight_half(base + e + j);
  return g;
}

float group_product(f16vec4 a, f16vec4 w) { return float(dot(a, w)); }

#endif
