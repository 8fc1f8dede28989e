// The body shared by the legacy decoders (q4_0.glsl, q4_1.glsl, q5_0.glsl,
// q5_1.glsl): blocks of 32 values, an fp16 scale d at byte 0, then either an
// fp16 minimum m (x = d * q + m) or a zero level (x = d * (q - zero)), the
// fifth bits of the Q5 types (bit i of a little-endian uint32 for value i)
// and 16 bytes of nibbles (byte j: value j in its low half, j + 16 in its high).
//
// The including file defines QUANT_BYTES, LEGACY_QS (byte of the nibbles),
// LEGACY_QH (byte of the fifth bits; Q5 types only), and LEGACY_MIN (the
// _1 types) or LEGACY_ZERO (the _0 types).
#ifndef ATTENDRE_QUANT_LEGACY_GLSL
#define ATTENDRE_QUANT_LEGACY_GLSL

#include "quant/words.glsl"

#define WEIGHTS_BLOCKS 1
const uint QUANT_VALUES = kLegacyBlockValues;
const uint QUANT_UNIT = kLegacyUnitValues;  // one unit per block

// A whole block, loaded in one span: x = scale * level + offset.
struct QuantBlock {
  float scale, offset;
  uint qh;     // fifth bits (0 for the 4-bit types)
  uint qs[4];  // the nibbles
};

QuantBlock quant_block(uint byte) {
  uint raw[SPAN_WORDS(QUANT_BYTES)];
  LOAD_SPAN(raw, byte, QUANT_BYTES);
  const uint sh = SPAN_SHIFT(byte);
  QuantBlock b;
  const vec2 dm = unpackHalf2x16(SPAN_WORD(raw, 0u, sh));
  b.scale = dm.x;
#ifdef LEGACY_MIN
  b.offset = dm.y;
#else
  b.offset = -LEGACY_ZERO * dm.x;
#endif
#ifdef LEGACY_QH
  b.qh = SPAN_WORD(raw, LEGACY_QH, sh);
#else
  b.qh = 0u;
#endif
  [[unroll]] for (uint j = 0u; j < 4u; ++j) b.qs[j] = SPAN_WORD(raw, LEGACY_QS + 4u * j, sh);
  return b;
}

// The block's 32 values (its only unit).
void quant_unit(QuantBlock b, uint byte, uint unit, out float v[QUANT_UNIT]) {
  [[unroll]] for (uint j = 0u; j < 4u; ++j)
    [[unroll]] for (uint m = 0u; m < 4u; ++m) {
      const uint i = 4u * j + m, bits = b.qs[j] >> (8u * m);
      v[i] = fma(float((bits & 0xFu) | (((b.qh >> i) & 1u) << 4u)), b.scale, b.offset);
      v[i + 16u] = fma(float(((bits >> 4u) & 0xFu) | (((b.qh >> (i + 16u)) & 1u) << 4u)), b.scale, b.offset);
    }
}

// Value i of the block at `byte`, read alone.
float quant_value(uint byte, uint i) {
  const vec2 dm = unpackHalf2x16(weight_word32(byte));
  uint q = (weight_byte(byte + LEGACY_QS + (i & 15u)) >> (4u * (i >> 4u))) & 0xFu;
#ifdef LEGACY_QH
  q |= ((weight_word32(byte + LEGACY_QH) >> i) & 1u) << 4u;
#endif
#ifdef LEGACY_MIN
  return fma(float(q), dm.x, dm.y);
#else
  return dm.x * (float(q) - LEGACY_ZERO);
#endif
}

#endif
