// Q8_0: { fp16 d; int8 qs[32] } = 34 bytes, x = d * q, q in [-127, 127].
#ifndef ATTENDRE_QUANT_Q8_0_GLSL
#define ATTENDRE_QUANT_Q8_0_GLSL

#include "quant/words.glsl"

#define WEIGHTS_BLOCKS 1
const uint QUANT_VALUES = kLegacyBlockValues;
const uint QUANT_BYTES = kQ8_0BlockBytes;
const uint QUANT_UNIT = kLegacyUnitValues;  // one unit per block

struct QuantBlock {
  float d;
};

QuantBlock quant_block(uint byte) { return QuantBlock(weight_half(byte)); }

#ifdef WEIGHTS_INT8
// storageBuffer8BitAccess (the kernel enables GL_EXT_shader_8bit_storage):
// the quants read as int8 values from int8 views of the weight binding, in
// pairs where a whole quad is decoded (a block starts at an even byte, so
// its quants do too); the scale still through the 32-bit words.
layout(std430, binding = 1) readonly buffer WeightInt8 { int8_t w_int8[]; };        // aliases WeightWords
layout(std430, binding = 1) readonly buffer WeightInt8x2 { i8vec2 w_int8x2[]; };   // aliases WeightWords

struct QuantUnit {
  uint pair0;  // the i8vec2 index of the block's first quants
};

QuantUnit quant_unit_load(QuantBlock b, uint byte, uint unit) { return QuantUnit((byte + 2u) / 2u); }

vec4 quant_quad(QuantBlock b, QuantUnit u, uint q) {
  return b.d * vec4(ivec2(w_int8x2[u.pair0 + 2u * q]), ivec2(w_int8x2[u.pair0 + 2u * q + 1u]));
}

float quant_value(uint byte, uint i) { return weight_half(byte) * float(int(w_int8[byte + 2u + i])); }

#else

// The 32 quants, four int8 a word.
struct QuantUnit {
  uint qs[8];
};

QuantUnit quant_unit_load(QuantBlock b, uint byte, uint unit) {
  uint raw[SPAN_WORDS(32u)];
  LOAD_SPAN(raw, byte + 2u, 32u);
  const uint sh = SPAN_SHIFT(byte + 2u);
  QuantUnit u;
  [[unroll]] for (uint j = 0u; j < 8u; ++j) u.qs[j] = SPAN_WORD(raw, 4u * j, sh);
  return u;
}

vec4 quant_quad(QuantBlock b, QuantUnit u, uint q) {
  const uint w = u.qs[q];
  return b.d * vec4(ivec4(w << 24u, w << 16u, w << 8u, w) >> 24);
}

float quant_value(uint byte, uint i) {
  return weight_half(byte) * float(int(weight_byte(byte + 2u + i) << 24u) >> 24);
}

#endif  // WEIGHTS_INT8

#endif
