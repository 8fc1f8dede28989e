// Q6_K: { uint8 ql[128]; uint8 qh[64]; int8 scales[16]; fp16 d } = 210
// bytes; 16 sub-blocks of 16 values, x = d * scales[i / 16] * (q - 32), q in
// [0, 63]. Each half h (128 values) uses ql[64h ..] and qh[32h ..]: for
// l < 32, values 128h + 32k + l (k = 0..3) take their low 4 bits from
// ql[64h + l] (k = 0 low nibble, k = 2 high) and ql[64h + 32 + l] (k = 1
// low, k = 3 high), and their top 2 bits from bits 2k, 2k + 1 of qh[32h + l].
#ifndef ATTENDRE_QUANT_Q6_K_GLSL
#define ATTENDRE_QUANT_Q6_K_GLSL

#include "quant/words.glsl"

#define WEIGHTS_BLOCKS 1
const uint QUANT_VALUES = kSuperBlockValues;
const uint QUANT_BYTES = kQ6_KBlockBytes;
const uint QUANT_UNIT = kQ6_KUnitValues;  // a half: its low and high bits share bytes
const uint kQ6High = 128u, kQ6Scales = 192u, kQ6D = 208u;

struct QuantBlock {
  float d;
  uint scales[4];  // 16 int8
};

QuantBlock quant_block(uint byte) {
  uint raw[SPAN_WORDS(16u)];
  LOAD_SPAN(raw, byte + kQ6Scales, 16u);
  const uint sh = SPAN_SHIFT(byte);
  QuantBlock b;
  b.d = weight_half(byte + kQ6D);
  [[unroll]] for (uint j = 0u; j < 4u; ++j) b.scales[j] = SPAN_WORD(raw, 4u * j, sh);
  return b;
}

// Unit h: values 128h .. 128h + 127.
void quant_unit(QuantBlock b, uint byte, uint h, out float v[QUANT_UNIT]) {
  uint low[SPAN_WORDS(64u)], high[SPAN_WORDS(32u)];
  LOAD_SPAN(low, byte + 64u * h, 64u);
  LOAD_SPAN(high, byte + kQ6High + 32u * h, 32u);
  const uint sh = SPAN_SHIFT(byte);
  // Sub-block s of the half (16 values each) is scale byte s of these words;
  // x = scale * q - 32 scale.
  const uint s03 = h == 0u ? b.scales[0] : b.scales[2], s47 = h == 0u ? b.scales[1] : b.scales[3];
  float scale[8], offset[8];
  [[unroll]] for (uint s = 0u; s < 4u; ++s) {
    scale[s] = b.d * signed_byte(s03, s);
    scale[s + 4u] = b.d * signed_byte(s47, s);
  }
  [[unroll]] for (uint s = 0u; s < 8u; ++s) offset[s] = -32.0 * scale[s];
  [[unroll]] for (uint j = 0u; j < 8u; ++j) {
    const uint l0 = SPAN_WORD(low, 4u * j, sh), l1 = SPAN_WORD(low, 32u + 4u * j, sh);
    const uint hb = SPAN_WORD(high, 4u * j, sh);
    // Whole words first: byte m of q[k] is the 6-bit level of value 32k + 4j + m.
    const uint q[4] = uint[4]((l0 & 0x0F0F0F0Fu) | ((hb << 4u) & 0x30303030u),
                              (l1 & 0x0F0F0F0Fu) | ((hb << 2u) & 0x30303030u),
                              ((l0 >> 4u) & 0x0F0F0F0Fu) | (hb & 0x30303030u),
                              ((l1 >> 4u) & 0x0F0F0F0Fu) | ((hb >> 2u) & 0x30303030u));
    [[unroll]] for (uint k = 0u; k < 4u; ++k)
      [[unroll]] for (uint m = 0u; m < 4u; ++m) {
        const uint s = 2u * k + (j >> 2u);  // value 32k + 4j + m is in sub-block 2k + (4j + m) / 16
        v[32u * k + 4u * j + m] = fma(float((q[k] >> (8u * m)) & 63u), scale[s], offset[s]);
      }
  }
}

float quant_value(uint byte, uint i) {
  const uint h = i >> 7u, k = (i >> 5u) & 3u, l = i & 31u;
  const uint low = (weight_byte(byte + 64u * h + 32u * (k & 1u) + l) >> (4u * (k >> 1u))) & 15u;
  const uint high = (weight_byte(byte + kQ6High + 32u * h + l) >> (2u * k)) & 3u;
  const float scale = float(int(weight_byte(byte + kQ6Scales + (i >> 4u)) << 24u) >> 24);
  return weight_half(byte + kQ6D) * scale * (float(low | (high << 4u)) - 32.0);
}

#endif
