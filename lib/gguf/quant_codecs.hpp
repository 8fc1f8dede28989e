// One block codec per ggml type (internal to quant.cpp and its codec files):
// decode one block into doubles, encode one block from floats. The dispatch
// in quant.cpp checks sizes and finiteness, so codecs see whole blocks only,
// and hands encoders a zeroed block (they may OR bits into it).
#pragma once

#include "gguf/gguf.hpp"
#include "core/half.hpp"  // fp16 <-> float, header-only and Vulkan-free

#include <cmath>
#include <cstring>

namespace attendre::gguf::detail {

struct BlockCodec {
  TensorType type;
  uint32_t elements;  // per block
  uint32_t bytes;     // per block
  void (*decode)(const std::byte* block, double* out);
  void (*encode)(const float* in, std::byte* block);
};

std::span<const BlockCodec> float_codecs();   // F32, F16, BF16 (quant.cpp)
std::span<const BlockCodec> legacy_codecs();  // Q4_0, Q4_1, Q5_0, Q5_1, Q8_0 (quant_legacy.cpp)
std::span<const BlockCodec> k_codecs();       // Q4_K, Q5_K, Q6_K (quant_k.cpp)

inline double load_half(const std::byte* at) {
  uint16_t bits;
  std::memcpy(&bits, at, 2);
  return half::half_to_float(bits);
}

inline void store_half(std::byte* at, float value) {
  const uint16_t bits = half::float_to_half(value);
  std::memcpy(at, &bits, 2);
}

inline uint8_t byte_at(const std::byte* block, size_t i) { return static_cast<uint8_t>(block[i]); }

// Round to nearest, ties to even (ggml's nearest_int).
inline int nearest_int(float value) { return static_cast<int>(std::lrintf(value)); }

}  // namespace attendre::gguf::detail
