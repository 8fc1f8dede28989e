// Names and block sizes of GGUF's value types and ggml's tensor types.
// Block sizes follow ggml-common.h's block structs (the static_asserts there
// spell each size out); QK_K = 256 for the K- and I-quants.
#include "gguf/gguf.hpp"

namespace attendre::gguf {
namespace {

struct TensorTypeInfo {
  TensorType type;
  const char* name;
  BlockSize block;
};

constexpr uint32_t kQK = 32;    // elements per block of the legacy quants (Q4_0 ... Q8_1)
constexpr uint32_t kQK_K = 256;  // elements per super-block of the K-, I- and T-quants

constexpr TensorTypeInfo kTensorTypes[] = {
    {TensorType::f32, "F32", {1, 4}},
    {TensorType::f16, "F16", {1, 2}},
    {TensorType::q4_0, "Q4_0", {kQK, 2 + 16}},            // d, 16 bytes of nibbles
    {TensorType::q4_1, "Q4_1", {kQK, 2 + 2 + 16}},        // d, m, nibbles
    {TensorType::q5_0, "Q5_0", {kQK, 2 + 4 + 16}},        // d, 32 high bits, nibbles
    {TensorType::q5_1, "Q5_1", {kQK, 2 + 2 + 4 + 16}},    // d, m, high bits, nibbles
    {TensorType::q8_0, "Q8_0", {kQK, 2 + 32}},            // d, 32 int8
    {TensorType::q8_1, "Q8_1", {kQK, 2 + 2 + 32}},        // d, s, 32 int8
    {TensorType::q2_k, "Q2_K", {kQK_K, 16 + 64 + 2 + 2}},  // scales, 2-bit quants, d, dmin
    {TensorType::q3_k, "Q3_K", {kQK_K, 32 + 64 + 12 + 2}},  // hmask, 2-bit quants, scales, d
    {TensorType::q4_k, "Q4_K", {kQK_K, 2 + 2 + 12 + 128}},  // d, dmin, scales, nibbles
    {TensorType::q5_k, "Q5_K", {kQK_K, 2 + 2 + 12 + 32 + 128}},  // d, dmin, scales, high bits, nibbles
    {TensorType::q6_k, "Q6_K", {kQK_K, 128 + 64 + 16 + 2}},      // low nibbles, high 2 bits, scales, d
    {TensorType::q8_k, "Q8_K", {kQK_K, 4 + 256 + 32}},           // float d, int8 quants, int16 sums
    {TensorType::iq2_xxs, "IQ2_XXS", {kQK_K, 2 + 64}},
    {TensorType::iq2_xs, "IQ2_XS", {kQK_K, 2 + 64 + 8}},
    {TensorType::iq3_xxs, "IQ3_XXS", {kQK_K, 2 + 96}},
    {TensorType::iq1_s, "IQ1_S", {kQK_K, 2 + 32 + 16}},
    {TensorType::iq4_nl, "IQ4_NL", {kQK, 2 + 16}},
    {TensorType::iq3_s, "IQ3_S", {kQK_K, 2 + 64 + 8 + 32 + 4}},
    {TensorType::iq2_s, "IQ2_S", {kQK_K, 2 + 64 + 8 + 8}},
    {TensorType::iq4_xs, "IQ4_XS", {kQK_K, 2 + 2 + 4 + 128}},
    {TensorType::i8, "I8", {1, 1}},
    {TensorType::i16, "I16", {1, 2}},
    {TensorType::i32, "I32", {1, 4}},
    {TensorType::i64, "I64", {1, 8}},
    {TensorType::f64, "F64", {1, 8}},
    {TensorType::iq1_m, "IQ1_M", {kQK_K, 32 + 16 + 8}},
    {TensorType::bf16, "BF16", {1, 2}},
    {TensorType::tq1_0, "TQ1_0", {kQK_K, 48 + 4 + 2}},  // base-3 quants, 2-bit quants, d
    {TensorType::tq2_0, "TQ2_0", {kQK_K, 64 + 2}},
    {TensorType::mxfp4, "MXFP4", {kQK, 1 + 16}},  // E8M0 exponent, FP4 (E2M1) nibbles
};

const TensorTypeInfo* find(TensorType type) {
  for (const TensorTypeInfo& info : kTensorTypes)
    if (info.type == type) return &info;
  return nullptr;
}

}  // namespace

std::string to_string(ValueType type) {
  switch (type) {
    case ValueType::u8: return "uint8";
    case ValueType::i8: return "int8";
    case ValueType::u16: return "uint16";
    case ValueType::i16: return "int16";
    case ValueType::u32: return "uint32";
    case ValueType::i32: return "int32";
    case ValueType::f32: return "float32";
    case ValueType::boolean: return "bool";
    case ValueType::string: return "string";
    case ValueType::array: return "array";
    case ValueType::u64: return "uint64";
    case ValueType::i64: return "int64";
    case ValueType::f64: return "float64";
  }
  return "type " + std::to_string(static_cast<uint32_t>(type));
}

std::string to_string(TensorType type) {
  if (const TensorTypeInfo* info = find(type)) return info->name;
  return "type " + std::to_string(static_cast<uint32_t>(type));
}

std::optional<BlockSize> block_size(TensorType type) {
  if (const TensorTypeInfo* info = find(type)) return info->block;
  return std::nullopt;
}

}  // namespace attendre::gguf
