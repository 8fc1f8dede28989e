// Q8_0: { fp16 d; int8 qs[32] } = 34 bytes, x = d * q, q in [-127, 127].
#ifndef ATTENDRE_QUANT_Q8_0_GLSL
#define ATTENDRE_QUANT_Q8_0_GLSL

#include "quant/words.glsl"

#define WEIGHTS_BLOCKS 1
const uint QUANT_VALUES = kLegacyBlockValues;
const uint QUANT_BYTES = kQ8_0BlockBytes;
const uint QUANT_UNIT = kLegacyUnitValues;  // one unit per block

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

#endif
