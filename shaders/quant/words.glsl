// Reading GGUF blocks through 32-bit loads, so that devices without 8- or
// 16-bit storage decode them: a block starts at any even byte (18-, 22-,
// 34- and 210-byte blocks leave every other block half a word off), so a
// field is read as the words that hold it, then shifted into place.
//
// Reads word i of the weights as WEIGHT_WORD(i) (weights.glsl: `uint w_words[]`,
// or the texel buffer of WEIGHTS_TEXEL_WORDS).
#ifndef ATTENDRE_QUANT_WORDS_GLSL
#define ATTENDRE_QUANT_WORDS_GLSL

#include "interface/quant.h"

// The 32 bits at bit t (0, 16 or 32) of the 64-bit pair hi:lo. GLSL leaves
// shifts by 32 undefined, so each shift is done in two halves.
uint take32(uint lo, uint hi, uint t) {
  const uint down = t >> 1u, up = (32u - t) >> 1u;
  return ((lo >> down) >> down) | ((hi << up) << up);
}

// A span: raw[k] = word k of the words holding bytes [byte, byte + len) of
// the weights (byte even), n = SPAN_WORDS(len) of them; a last word past the
// span repeats the span's last word, so nothing past it is ever read. Then
// SPAN_WORD(raw, f, sh) is the 32 bits at byte f of the span (f even,
// (f >> 2) + 1 < n) with sh = SPAN_SHIFT(byte).
#define SPAN_WORDS(len) (((len) + 5u) / 4u)
#define SPAN_SHIFT(byte) (((byte) & 2u) * 8u)
#define LOAD_SPAN(raw, byte, len)                                                        \
  [[unroll]] for (uint k_ = 0u; k_ < SPAN_WORDS(len); ++k_)                                         \
    raw[k_] = WEIGHT_WORD(min(((byte) >> 2u) + k_, ((byte) + (len) - 1u) >> 2u));
#define SPAN_WORD(raw, f, sh) take32(raw[(f) >> 2u], raw[((f) >> 2u) + 1u], (sh) + 8u * ((f) & 3u))

// One field straight from the weights, for the per-element decoders.
uint weight_byte(uint byte) { return (WEIGHT_WORD(byte >> 2u) >> (8u * (byte & 3u))) & 0xFFu; }
float weight_half(uint byte) { return unpackHalf2x16(WEIGHT_WORD(byte >> 2u) >> (8u * (byte & 2u))).x; }
// The 32 bits at an even byte (two loads when they straddle a word).
uint weight_word32(uint byte) {
  const uint i = byte >> 2u, sh = SPAN_SHIFT(byte);
  return take32(WEIGHT_WORD(i), WEIGHT_WORD(i + (sh >> 4u)), sh);
}

// Byte m (0..3) of a word as a signed value (int8 quants and Q6_K scales).
float signed_byte(uint word, uint m) { return float(int(word << (24u - 8u * m)) >> 24); }

#endif
