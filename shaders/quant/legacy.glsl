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

// The block's one unit holds everything; quant_block reads nothing.
struct QuantBlock {
  uint unused;
};

QuantBlock quant_block(uint byte) { return QuantBlock(0u); }

// A whole block, loaded in one span: x = scale * level + offset.
struct QuantUnit {
  float scale, offset;
  uint qh;     // fifth bits (0 for the 4-bit types)
  uint qs[4];  // the nibbles
};

QuantUnit quant_unit_load(QuantBlock b, uint byte, uint unit) {
  uint raw[SPAN_WORDS(QUANT_BYTES)];
  LOAD_SPAN(raw, byte, QUANT_BYTES);
  const uint sh = SPAN_SHIFT(byte);
  QuantUnit u;
  const vec2 dm = unpackHalf2x16(SPAN_WORD(raw, 0u, sh));
  u.scale = dm.x;
#ifdef LEGACY_MIN
  u.offset = dm.y;
#else
  u.offset = -LEGACY_ZERO * dm.x;
#endif
#ifdef LEGACY_QH
  u.qh = SPAN_WORD(raw, LEGACY_QH, sh);
#else
  u.qh = 0u;
#endif
  [[unroll]] for (uint j = 0u; j < 4u; ++j) u.qs[j] = SPAN_WORD(raw, LEGACY_QS + 4u * j, sh);
  return u;
}

// Values 4q .. 4q + 3: the low nibbles of word q (q < 4), the high ones of
// word q - 4 (values 16 .. 31).
vec4 quant_quad(QuantBlock b, QuantUnit u, uint q) {
  const uint i = 4u * q, bits = u.qs[q & 3u] >> (4u * (q >> 2u));
  const uvec4 level = ((uvec4(bits) >> uvec4(0u, 8u, 16u, 24u)) & 0xFu) |
                      (((uvec4(u.qh) >> (uvec4(0u, 1u, 2u, 3u) + i)) & 1u) << 4u);
  return fma(vec4(level), vec4(u.scale), vec4(u.offset));
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
