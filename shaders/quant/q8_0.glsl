// Q8_0: { fp16 d; int8 qs[32] } = 34 bytes, x = d * q, q in [-127, 127].
#ifndef ATTENDRE_QUANT_Q8_0_GLSL
#define ATTENDRE_QUANT_Q8_0_GLSL

#include "quant/words.glsl"

#define WEIGHTS_BLOCKS 1
const uint QUANT_VALUES = kLegacyBlockValues;
const uint QUANT_BYTES = kQ8_0BlockBytes;
const uint QUANT_UNIT = kLegacyUnitValues;  // one unit per block

#ifdef WEIGHTS_INT8
// storageBuffer8BitAccess (the kernel enables GL_EXT_shader_8bit_storage):
// the quants read as int8 values from int8 views of the weight binding, in
// pairs where a whole unit is decoded (a block starts at an even byte, so
// its quants do too); the scale still through the 32-bit words.
layout(std430, binding = 1) readonly buffer WeightInt8 { int8_t w_int8[]; };        // aliases WeightWords
layout(std430, binding = 1) readonly buffer WeightInt8x2 { i8vec2 w_int8x2[]; };   // aliases WeightWords

struct QuantBlock {
  float d;
};

QuantBlock quant_block(uint byte) { return QuantBlock(weight_half(byte)); }

void quant_unit(QuantBlock b, uint byte, uint unit, out float v[QUANT_UNIT]) {
  [[unroll]] for (uint j = 0u; j < QUANT_UNIT / 2u; ++j) {
    const vec2 q = vec2(ivec2(w_int8x2[(byte + 2u) / 2u + j]));
    v[2u * j] = b.d * q.x;
    v[2u * j + 1u] = b.d * q.y;
  }
}

float quant_value(uint byte, uint i) { return weight_half(byte) * float(int(w_int8[byte + 2u + i])); }

#else

// A whole block, loaded in one span.
struct QuantBlock {
  float d;
  uint qs[8];  // four int8 per word
};

QuantBlock quant_block(uint byte) {
  uint raw[SPAN_WORDS(QUANT_BYTES)];
  LOAD_SPAN(raw, byte, QUANT_BYTES);
  const uint sh = SPAN_SHIFT(byte);
  QuantBlock b;
  b.d = unpackHalf2x16(SPAN_WORD(raw, 0u, sh)).x;
  [[unroll]] for (uint j = 0u; j < 8u; ++j) b.qs[j] = SPAN_WORD(raw, 2u + 4u * j, sh);
  return b;
}

void quant_unit(QuantBlock b, uint byte, uint unit, out float v[QUANT_UNIT]) {
  [[unroll]] for (uint j = 0u; j < 8u; ++j)
    [[unroll]] for (uint m = 0u; m < 4u; ++m) v[4u * j + m] = b.d * signed_byte(b.qs[j], m);
}

float quant_value(uint byte, uint i) {
  return weight_half(byte) * float(int(weight_byte(byte + 2u + i) << 24u) >> 24);
}

#endif  // WEIGHTS_INT8

#endif
