#include "core/fail.hpp"

#include <attendre/error.hpp>
#include <attendre/tensor.hpp>

namespace attendre {

std::string_view to_string(ElementType type) {
  switch (type) {
    case ElementType::f32: return "F32";
    case ElementType::f16: return "F16";
    case ElementType::bf16: return "BF16";
    case ElementType::q4_0: return "Q4_0";
    case ElementType::q4_1: return "Q4_1";
    case ElementType::q5_0: return "Q5_0";
    case ElementType::q5_1: return "Q5_1";
    case ElementType::q8_0: return "Q8_0";
    case ElementType::q4_k: return "Q4_K";
    case ElementType::q5_k: return "Q5_K";
    case ElementType::q6_k: return "Q6_K";
  }
  return "unknown";
}

std::optional<ElementType> element_type(uint32_t id) {
  for (ElementType t : {ElementType::f32, ElementType::f16, ElementType::bf16, ElementType::q4_0, ElementType::q4_1,
                        ElementType::q5_0, ElementType::q5_1, ElementType::q8_0, ElementType::q4_k, ElementType::q5_k,
                        ElementType::q6_k})
    if (static_cast<uint32_t>(t) == id) return t;
  return std::nullopt;
}

// Block layouts of ggml's types (ggml-common.h): a value count and the
// bytes of one block holding its scales and quants.
ElementBlock element_block(ElementType type) {
  switch (type) {
    case ElementType::f32: return {1, 4};
    case ElementType::f16: return {1, 2};
    case ElementType::bf16: return {1, 2};
    case ElementType::q4_0: return {32, 18};   // fp16 d, 16 bytes of nibbles
    case ElementType::q4_1: return {32, 20};   // fp16 d, fp16 m, 16 bytes of nibbles
    case ElementType::q5_0: return {32, 22};   // fp16 d, 4 bytes of high bits, 16 of nibbles
    case ElementType::q5_1: return {32, 24};   // fp16 d, fp16 m, 4 + 16
    case ElementType::q8_0: return {32, 34};   // fp16 d, 32 int8
    case ElementType::q4_k: return {256, 144};  // fp16 d, dmin, 12 bytes of 6-bit scales, 128 of nibbles
    case ElementType::q5_k: return {256, 176};  // as q4_k + 32 bytes of high bits
    case ElementType::q6_k: return {256, 210};  // 128 low nibbles, 64 high pairs, 16 int8 scales, fp16 d
  }
  return {1, 4};
}

uint64_t encoded_bytes(ElementType type, uint64_t values) {
  const ElementBlock b = element_block(type);
  require(values % b.values == 0, std::string(to_string(type)) + " holds whole blocks of " + std::to_string(b.values) +
                                      " values, not " + std::to_string(values));
  return values / b.values * b.bytes;
}

}  // namespace attendre
