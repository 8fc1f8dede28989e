// The A rows (binding 0) of the matrix products (matmul.comp, matvec.comp,
// matmul_direct.comp): fp32 words by default, or fp16 values packed two per
// 32-bit word (StackConfig::activations = f16: element 2w of a row in the
// low half of its word w, rows starting on words, every value the fp16 the
// writer rounded, shaders/stored.glsl), read as the fp16 weights are
// (weights.glsl): with -DINPUT_F16 as 16-bit values (needs
// storageBuffer16BitAccess: the kernel enables GL_EXT_shader_16bit_storage),
// with -DINPUT_F16_WORDS by unpackHalf2x16 of the 32-bit words, where 16-bit
// storage is absent or switched off. Either way each value becomes a float
// at once: math and accumulation stay fp32, and the product of two fp16
// values is exact in fp32. The exception, -DINPUT_F16 with -DHALF_MATH
// (shaderFloat16, fp16 weights too): a_half() hands the fp16 value itself
// to the fp16 products of half_math.glsl.
//
// Offsets and strides of the rows (pc.a_*) count 32-bit words in every build:
// element e of the row starting at word `row` is half 2 * row + e.
//   a_load(row, e):  element e of the row starting at word `row`;
//   a_load4(row, e): elements e..e+3;
//   a_load4_aligned(row, e): the same in one vector load, for e % 4 == 0 and
//     rows starting on a multiple of A_VEC_WORDS words (fp32 rows with
//     -DINPUT_TEXEL: one texel fetch from binding 5).
#ifndef ATTENDRE_INPUT_ROWS_GLSL
#define ATTENDRE_INPUT_ROWS_GLSL

#if defined(INPUT_F16)
layout(std430, binding = 0) readonly buffer ARows { float16_t a_halves[]; };
layout(std430, binding = 0) readonly buffer ARows4 { f16vec4 a_halves4[]; };  // aliases ARows
const uint A_VEC_WORDS = 2u;
float a_load(uint row, uint e) { return float(a_halves[2u * row + e]); }
vec4 a_load4_aligned(uint row, uint e) { return vec4(a_halves4[(2u * row + e) >> 2u]); }
#ifdef HALF_MATH
float16_t a_half(uint row, uint e) { return a_halves[2u * row + e]; }
f16vec4 a_half4_aligned(uint row, uint e) { return a_halves4[(2u * row + e) >> 2u]; }
#endif
#elif defined(INPUT_F16_WORDS)
layout(std430, binding = 0) readonly buffer ARows { uint a_words[]; };
layout(std430, binding = 0) readonly buffer ARows2 { uvec2 a_words2[]; };  // aliases ARows
const uint A_VEC_WORDS = 2u;
float a_load(uint row, uint e) { return unpackHalf2x16(a_words[row + (e >> 1u)])[e & 1u]; }
vec4 a_load4_aligned(uint row, uint e) {
  const uvec2 w = a_words2[(row + (e >> 1u)) >> 1u];
  return vec4(unpackHalf2x16(w.x), unpackHalf2x16(w.y));
}
#else
layout(std430, binding = 0) readonly buffer ARows { float a_rows[]; };
const uint A_VEC_WORDS = 4u;
float a_load(uint row, uint e) { return a_rows[row + e]; }
#ifdef INPUT_TEXEL
// The quads from binding 5: binding 0's range as R32G32B32A32_SFLOAT texels,
// which a CPU device fetches with vector gathers (weights.glsl's texels).
layout(binding = 5) uniform samplerBuffer a_texels;
vec4 a_load4_aligned(uint row, uint e) { return texelFetch(a_texels, int((row + e) >> 2u)); }
#else
layout(std430, binding = 0) readonly buffer ARows4 { vec4 a_rows4[]; };  // aliases ARows
vec4 a_load4_aligned(uint row, uint e) { return a_rows4[(row + e) >> 2u]; }
#endif
#endif

vec4 a_load4(uint row, uint e) {
  return vec4(a_load(row, e), a_load(row, e + 1u), a_load(row, e + 2u), a_load(row, e + 3u));
}

// Whether every A row of the call starts on a multiple of A_VEC_WORDS words.
bool a_rows_vec_aligned() { return ((pc.a_offset | pc.a_stride) & (A_VEC_WORDS - 1u)) == 0u; }

#endif
