// The weight binding (binding 1) of the matmul and embedding kernels, in any
// of the encodings a WEIGHTS_* define selects: F32 (none), F16 (WEIGHTS_F16,
// needs storageBuffer16BitAccess: the kernel enables the extension; without
// it WEIGHTS_F16_WORDS unpacks pairs from 32-bit words), BF16
// (WEIGHTS_BF16, decoded from 32-bit words) or a GGUF block type
// (WEIGHTS_Q4_0 ... WEIGHTS_Q6_K: its decoder in quant/, which defines
// WEIGHTS_BLOCKS; Q8_0 with WEIGHTS_INT8 reads its quants as int8 values,
// needing storageBuffer8BitAccess). The same binding holds fp32 words (biases).
//
// Offsets into it count elements for the float types and bytes (even) for
// the block types (interface/matmul.h).
//
// WEIGHTS_TEXEL_WORDS (block types) reads the blocks' words from binding 4
// instead, the same range as a uniform texel buffer of R32_UINT: a CPU
// device (lavapipe) fetches texels with vector gathers, where each
// storage-buffer load is a loop over the lanes (DeviceCaps::texel_buffers).
#ifndef ATTENDRE_WEIGHTS_GLSL
#define ATTENDRE_WEIGHTS_GLSL

layout(std430, binding = 1) readonly buffer WeightWords { uint w_words[]; };
#ifdef WEIGHTS_TEXEL_WORDS
layout(binding = 4) uniform usamplerBuffer w_word_texels;  // binding 1's range as R32_UINT texels
#define WEIGHT_WORD(i) texelFetch(w_word_texels, int(i)).x
#else
#define WEIGHT_WORD(i) w_words[i]
#endif

#if defined(WEIGHTS_Q4_0)
#include "quant/q4_0.glsl"
#elif defined(WEIGHTS_Q4_1)
#include "quant/q4_1.glsl"
#elif defined(WEIGHTS_Q5_0)
#include "quant/q5_0.glsl"
#elif defined(WEIGHTS_Q5_1)
#include "quant/q5_1.glsl"
#elif defined(WEIGHTS_Q8_0)
#include "quant/q8_0.glsl"
#elif defined(WEIGHTS_Q4_K)
#include "quant/q4_k.glsl"
#elif defined(WEIGHTS_Q5_K)
#include "quant/q5_k.glsl"
#elif defined(WEIGHTS_Q6_K)
#include "quant/q6_k.glsl"
#elif defined(WEIGHTS_F16)
layout(std430, binding = 1) readonly buffer Weights16 { float16_t w16[]; };  // aliases WeightWords
float weight(uint e) { return float(w16[e]); }
#ifdef HALF_MATH  // the fp16 value itself, for half_math.glsl's fp16 products
float16_t weight_half(uint e) { return w16[e]; }
#endif
#elif defined(WEIGHTS_F16_WORDS)
// fp16 where 16-bit storage is absent: element e is half e & 1 of word e / 2.
float weight(uint e) { return unpackHalf2x16(w_words[e >> 1u])[e & 1u]; }
#elif defined(WEIGHTS_BF16)
// bfloat16 is the top half of a binary32: element e is half e & 1 of word e / 2.
float weight(uint e) {
  const uint w = w_words[e >> 1u];
  return uintBitsToFloat((e & 1u) != 0u ? w & 0xFFFF0000u : w << 16u);
}
#else
float weight(uint e) { return uintBitsToFloat(w_words[e]); }
#endif

// The fp32 word `word` of the binding (a bias).
float weight_float(uint word) { return uintBitsToFloat(w_words[word]); }

#ifdef WEIGHTS_BLOCKS
// Bytes of a row of `cols` values (a whole number of blocks).
uint block_row_bytes(uint cols) { return cols / QUANT_VALUES * QUANT_BYTES; }

// Every decoder (quant/) reads a block as: quant_block(byte), what its units
// share (scales); quant_unit_load(block, byte, unit), the unit's packed
// words in registers; quant_quad(block, unit, q), values 4q .. 4q + 3 of the
// unit. Decoding a quad at a time keeps only four values per output live
// (matmul_direct.comp applies them to all its rows before the next quad).
// Here: unit `unit` of the block at `byte` as QUANT_UNIT values.
void quant_unit(QuantBlock b, uint byte, uint unit, out float v[QUANT_UNIT]) {
  const QuantUnit u = quant_unit_load(b, byte, unit);
  [[unroll]] for (uint q = 0u; q < QUANT_UNIT / 4u; ++q) {
    const vec4 w = quant_quad(b, u, q);
    v[4u * q] = w.x;
    v[4u * q + 1u] = w.y;
    v[4u * q + 2u] = w.z;
    v[4u * q + 3u] = w.w;
  }
}
#endif

// Element i of row `row` of a matrix of `cols` columns at `offset`.
float weight_element(uint offset, uint cols, uint row, uint i) {
#ifdef WEIGHTS_BLOCKS
  return quant_value(offset + row * block_row_bytes(cols) + i / QUANT_VALUES * QUANT_BYTES, i % QUANT_VALUES);
#else
  return weight(offset + row * cols + i);
#endif
}

#endif
