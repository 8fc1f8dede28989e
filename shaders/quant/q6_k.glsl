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
struct QuantUnit {
  uint low[16];  // ql[64h ..]: words 0-7 bytes l (values 32k + l, k = 0 low, 2 high), 8-15 bytes 32 + l (k = 1, 3)
  uint high[8];  // qh[32h ..]: bits 2k, 2k + 1 of byte l
  uint s03, s47;  // the half's scales of sub-blocks 0-3 and 4-7 (int8 each)
};

QuantUnit quant_unit_load(QuantBlock b, uint byte, uint h) {
  uint low[SPAN_WORDS(64u)], high[SPAN_WORDS(32u)];
  LOAD_SPAN(low, byte + 64u * h, 64u);
  LOAD_SPAN(high, byte + kQ6High + 32u * h, 32u);
  const uint sh = SPAN_SHIFT(byte);
  QuantUnit u;
  [[unroll]] for (uint j = 0u; j < 16u; ++j) u.low[j] = SPAN_WORD(low, 4u * j, sh);
  [[unroll]] for (uint j = 0u; j < 8u; ++j) u.high[j] = SPAN_WORD(high, 4u * j, sh);
  u.s03 = h == 0u ? b.scales[0] : b.scales[2];
  u.s47 = h == 0u ? b.scales[1] : b.scales[3];
  return u;
}

// Values 4q .. 4q + 3 of the unit: 32k + 4j + m with k = q / 8, j = q % 8,
// in sub-block 2k + j / 4; x = scale * q - 32 scale.
vec4 quant_quad(QuantBlock b, QuantUnit u, uint q) {
  const uint k = q >> 3u, j = q & 7u, s = 2u * k + (j >> 2u);
  const uint l = u.low[j + 8u * (k & 1u)] >> (4u * (k >> 1u)), hb = u.high[j] >> (2u * k);
  const uint word = (l & 0x0F0F0F0Fu) | ((hb << 4u) & 0x30303030u);  // byte m: the 6-bit level of value m
  const float scale = b.d * signed_byte(s < 4u ? u.s03 : u.s47, s & 3u), offset = -32.0 * scale;
  return fma(vec4((uvec4(word) >> uvec4(0u, 8u, 16u, 24u)) & 63u), vec4(scale), vec4(offset));
}

float quant_value(uint byte, uint i) {
  const uint h = i >> 7u, k = (i >> 5u) & 3u, l = i & 31u;
  const uint low = (weight_byte(byte + 64u * h + 32u * (k & 1u) + l) >> (4u * (k >> 1u))) & 15u;
  const uint high = (weight_byte(byte + kQ6High + 32u * h + l) >> (2u * k)) & 3u;
  const float scale = float(int(weight_byte(byte + kQ6Scales + (i >> 4u)) << 24u) >> 24);
  return weight_half(byte + kQ6D) * scale * (float(low | (high << 4u)) - 32.0);
}

#endif
