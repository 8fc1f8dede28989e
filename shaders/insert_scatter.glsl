// The writes of one surviving chunk row into its slot (insert_scatter.comp,
// insert_direct.comp): element i (< sc_key_stride, which covers the key
// row's variants and the value row) of its key and value, and the slot's
// position, tag and initial score. fp16 memories (STORED_F16_WORDS,
// stored.glsl): element i is one word of the slot's row, two fp32 chunk
// elements rounded as the reference rounds. The includer declares kv[]
// (writable) and chunk[] and includes stored.glsl, common.glsl and
// interface/insert.h first.
#ifndef ATTENDRE_INSERT_SCATTER_GLSL
#define ATTENDRE_INSERT_SCATTER_GLSL

#include "new_entry.glsl"

#ifdef STORED_HALF
// Element e of a chunk row of `count` floats at word `row`; 0 past its end
// (the pad element of an odd row).
float chunk_element(uint row, uint count, uint e) {
  return e < count ? uintBitsToFloat(chunk[row + e]) : 0.0;
}
#endif

void scatter_element(uint r, uint slot, uint i) {
#ifdef STORED_HALF
  const uint key_row = sc_chunk_key_offset + r * sc_key_stride, value_row = sc_chunk_value_offset + r * sc_kv_row;
  if (i < sc_kv_key_stride / 2u)
    kv[sc_kv_key_offset + slot * (sc_kv_key_stride / 2u) + i] =
        half_pair(chunk_element(key_row, sc_key_stride, 2u * i), chunk_element(key_row, sc_key_stride, 2u * i + 1u));
  if (i < sc_kv_value_stride / 2u)
    kv[sc_kv_value_offset + slot * (sc_kv_value_stride / 2u) + i] =
        half_pair(chunk_element(value_row, sc_kv_row, 2u * i), chunk_element(value_row, sc_kv_row, 2u * i + 1u));
#else
  if (i < sc_key_stride) kv[sc_kv_key_offset + slot * sc_key_stride + i] = chunk[sc_chunk_key_offset + r * sc_key_stride + i];
  if (i < sc_kv_row) kv[sc_kv_value_offset + slot * sc_kv_row + i] = chunk[sc_chunk_value_offset + r * sc_kv_row + i];
#endif
}

void scatter_meta(uint r, uint slot) {
  const int position = int(chunk[sc_chunk_pos_offset + r]);
  kv[sc_kv_pos_offset + slot] = uint(position);
  kv[sc_kv_tag_offset + slot] = chunk[sc_chunk_tag_offset + r];
  kv[sc_kv_score_offset + slot] = initial_score_bits(sc_policy, position, chunk[sc_chunk_init_offset]);
}

#endif
