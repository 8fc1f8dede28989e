// Keys, values and queries as a memory stores them (KvMemoryConfig::storage,
// gpu/layouts.hpp): fp32 words by default; fp16 with STORED_F16 (16-bit
// loads: needs storageBuffer16BitAccess) or STORED_F16_WORDS (pairs unpacked
// from 32-bit words, where 16-bit storage is absent or switched off), the
// weights' two fp16 paths (weights.glsl). Writers of either fp16 variant
// store whole 32-bit words packed by half_pair (half_bits.glsl).
//
// Include right after GL_GOOGLE_include_directive (it may enable an
// extension). A section starts at 32-bit word `section`; `e` counts elements
// from there (fp16 rows are padded to an even count, so rows start on words).
//   STORED_VIEWS(binding, name): the aliases the loads read, declared after
//     the shader's own `readonly buffer { uint name[]; }` at that binding;
//   STORED_LOAD(name, section, e): element e as a float;
//   STORED_LOAD4(name, section, e): elements e..e+3 (e % 4 == 0).
// KV_TEXEL (fp32 memories only): KV_TEXELS(binding) declares that binding as
// the K/V memory's range viewed as R32G32B32A32_SFLOAT texels, and
// KV_LOAD4(section, e) fetches elements e..e+3 from it (lavapipe gathers
// texels for all lanes at once, where a storage-buffer load is a loop over
// them); without KV_TEXEL, KV_LOAD4 is STORED_LOAD4(kv, ...).
#ifndef ATTENDRE_STORED_GLSL
#define ATTENDRE_STORED_GLSL

#if defined(STORED_F16)
#extension GL_EXT_shader_16bit_storage : require
#define STORED_HALF 1
#define STORED_VIEWS(b, name)                                                                 \
  layout(std430, binding = b) readonly buffer name##Halves { float16_t name##_h[]; };        \
  layout(std430, binding = b) readonly buffer name##Halves4 { f16vec4 name##_h4[]; };
#define STORED_LOAD(name, section, e) float(name##_h[2u * (section) + (e)])
#define STORED_LOAD4(name, section, e) vec4(name##_h4[(2u * (section) + (e)) >> 2u])
#elif defined(STORED_F16_WORDS)
#define STORED_HALF 1
#define STORED_VIEWS(b, name) layout(std430, binding = b) readonly buffer name##Pairs { uvec2 name##_w2[]; };
#define STORED_LOAD(name, section, e) unpackHalf2x16(name[(section) + ((e) >> 1u)])[(e) & 1u]
#define STORED_LOAD4(name, section, e) stored_unpack4(name##_w2[((section) + ((e) >> 1u)) >> 1u])
vec4 stored_unpack4(uvec2 w) { return vec4(unpackHalf2x16(w.x), unpackHalf2x16(w.y)); }
#else
#define STORED_VIEWS(b, name) layout(std430, binding = b) readonly buffer name##Vec4 { vec4 name##_f4[]; };
#define STORED_LOAD(name, section, e) uintBitsToFloat(name[(section) + (e)])
#define STORED_LOAD4(name, section, e) name##_f4[((section) + (e)) >> 2u]
#endif

// RING_TEXEL (fp32 rings only): RING_TEXELS(binding) declares the Q ring's
// range as R32G32B32A32_SFLOAT texels and RING_LOAD4(e) fetches its
// elements e..e+3; without it, RING_LOAD4 is STORED_LOAD4(ring, 0u, e).
#ifdef RING_TEXEL
#define RING_TEXELS(b) layout(binding = b) uniform samplerBuffer ring_texels;
#define RING_LOAD4(e) texelFetch(ring_texels, int((e) >> 2u))
#else
#define RING_TEXELS(b)
#define RING_LOAD4(e) STORED_LOAD4(ring, 0u, e)
#endif

#ifdef KV_TEXEL
#define KV_TEXELS(b) layout(binding = b) uniform samplerBuffer kv_texels;
#define KV_LOAD4(section, e) texelFetch(kv_texels, int(((section) + (e)) >> 2u))
#else
#define KV_TEXELS(b)
#define KV_LOAD4(section, e) STORED_LOAD4(kv, section, e)
#endif

#ifdef STORED_HALF
#include "half_bits.glsl"
// x as the memory stores it, back in fp32 (exact: every fp16 is an fp32).
float stored_round(float x) { return unpackHalf2x16(half_bits(x)).x; }
#else
float stored_round(float x) { return x; }
#endif

#endif
