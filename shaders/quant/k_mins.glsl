// The body shared by the K-quants with minimums (q4_k.glsl, q5_k.glsl):
// super-blocks of 256 values in 8 sub-blocks of 32, each with a 6-bit scale
// sc and a 6-bit minimum m, x = d * sc * q - dmin * m. Bytes: fp16 d at 0,
// fp16 dmin at 2, the 12 packed scales at 4 (for j < 4, sc_j and m_j are the
// low 6 bits of bytes j and j + 4; for j >= 4, their low 4 bits are the low
// and high nibbles of byte j + 4 and their top 2 bits the top bits of bytes
// j - 4 (sc) and j (m)), Q5_K's fifth bits at K_QH (bit 2c of byte l for
// value 64c + l, bit 2c + 1 for value 64c + 32 + l), and the nibbles at K_QS
// (32 bytes per 64 values: byte l of chunk c holds value 64c + l in its low
// half and value 64c + 32 + l in its high half).
//
// The including file defines QUANT_BYTES, K_QS and, for Q5_K, K_QH.
#ifndef ATTENDRE_QUANT_K_MINS_GLSL
#define ATTENDRE_QUANT_K_MINS_GLSL

#include "quant/words.glsl"

#define WEIGHTS_BLOCKS 1
const uint QUANT_VALUES = kSuperBlockValues;
const uint QUANT_UNIT = kQ4_KUnitValues;  // two sub-blocks: one chunk of nibbles
const uint kKHeaderBytes = 16u;           // d, dmin, the packed scales

// What the 4 units of a block share: the scales and, for Q5_K, the fifth bits.
struct QuantBlock {
  float d, dmin;
  uint scales[3];  // the 12 packed bytes
#ifdef K_QH
  uint qh[8];
#endif
};

QuantBlock quant_block(uint byte) {
#ifdef K_QH
  const uint len = K_QS;  // the header and the fifth bits
#else
  const uint len = kKHeaderBytes;
#endif
  uint raw[SPAN_WORDS(len)];
  LOAD_SPAN(raw, byte, len);
  const uint sh = SPAN_SHIFT(byte);
  QuantBlock b;
  const vec2 dm = unpackHalf2x16(SPAN_WORD(raw, 0u, sh));
  b.d = dm.x;
  b.dmin = dm.y;
  [[unroll]] for (uint j = 0u; j < 3u; ++j) b.scales[j] = SPAN_WORD(raw, 4u + 4u * j, sh);
#ifdef K_QH
  [[unroll]] for (uint j = 0u; j < 8u; ++j) b.qh[j] = SPAN_WORD(raw, K_QH + 4u * j, sh);
#endif
  return b;
}

// (sc, m) of sub-block j from the 12 packed bytes.
vec2 k_scale_min(uint scales[3], uint j) {
  const uint low = 8u * (j & 3u);
  const uint sc_low = (scales[0] >> low) & 63u, m_low = (scales[1] >> low) & 63u;
  const uint sc_high = ((scales[2] >> low) & 15u) | (((scales[0] >> (low + 6u)) & 3u) << 4u);
  const uint m_high = ((scales[2] >> (low + 4u)) & 15u) | (((scales[1] >> (low + 6u)) & 3u) << 4u);
  return j < 4u ? vec2(sc_low, m_low) : vec2(sc_high, m_high);
}

// Unit c: values 64c .. 64c + 63 (sub-blocks 2c and 2c + 1), x = d * q + o.
struct QuantUnit {
  float d0, o0, d1, o1;
  uint qs[8];  // byte l: value l in its low half, 32 + l in its high
#ifdef K_QH
  uint high[8];  // the fifth bits: bit 8m (low half) and 8m + 1 (high) of word j for byte 4j + m
#endif
};

QuantUnit quant_unit_load(QuantBlock b, uint byte, uint c) {
  uint raw[SPAN_WORDS(32u)];
  LOAD_SPAN(raw, byte + K_QS + 32u * c, 32u);
  const uint sh = SPAN_SHIFT(byte);
  const vec2 sm0 = k_scale_min(b.scales, 2u * c), sm1 = k_scale_min(b.scales, 2u * c + 1u);
  QuantUnit u;
  u.d0 = b.d * sm0.x;
  u.o0 = -b.dmin * sm0.y;
  u.d1 = b.d * sm1.x;
  u.o1 = -b.dmin * sm1.y;
  [[unroll]] for (uint j = 0u; j < 8u; ++j) {
    u.qs[j] = SPAN_WORD(raw, 4u * j, sh);
#ifdef K_QH
    u.high[j] = b.qh[j] >> (2u * c);
#endif
  }
  return u;
}

// Values 4q .. 4q + 3 of the unit: the low nibbles of word q (q < 8), the
// high ones of word q - 8.
vec4 quant_quad(QuantBlock b, QuantUnit u, uint q) {
  const uint half_ = q >> 3u, j = q & 7u;
  uvec4 level = (uvec4(u.qs[j]) >> (uvec4(0u, 8u, 16u, 24u) + 4u * half_)) & 15u;
#ifdef K_QH
  level |= ((uvec4(u.high[j]) >> (uvec4(0u, 8u, 16u, 24u) + half_)) & 1u) << 4u;
#endif
  return half_ == 0u ? fma(vec4(level), vec4(u.d0), vec4(u.o0)) : fma(vec4(level), vec4(u.d1), vec4(u.o1));
}

float quant_value(uint byte, uint i) {
  uint raw[SPAN_WORDS(kKHeaderBytes)];
  LOAD_SPAN(raw, byte, kKHeaderBytes);
  const uint sh = SPAN_SHIFT(byte);
  const vec2 dm = unpackHalf2x16(SPAN_WORD(raw, 0u, sh));
  const uint scales[3] = uint[3](SPAN_WORD(raw, 4u, sh), SPAN_WORD(raw, 8u, sh), SPAN_WORD(raw, 12u, sh));
  const uint j = i >> 5u, l = i & 31u;  // sub-block j = 2c + (high half)
  uint q = (weight_byte(byte + K_QS + 32u * (i >> 6u) + l) >> (4u * (j & 1u))) & 15u;
#ifdef K_QH
  q |= ((weight_byte(byte + K_QH + l) >> j) & 1u) << 4u;
#endif
  const vec2 sm = k_scale_min(scales, j);
  return fma(float(q), dm.x * sm.x, -dm.y * sm.y);
}

#endif
