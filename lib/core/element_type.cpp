#include "core/try.hpp"

#include <attendre/error.hpp>
#include <attendre/tensor.hpp>

#include "interface/quant.h"

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

// Block layouts of ggml's types (ggml-common.h), as the kernels decode them
// (interface/quant.h): a value count and the bytes of one block holding its
// scales and quants.
ElementBlock element_block(ElementType type) {
  using namespace kernels;
  switch (type) {
    case ElementType::f32: return {1, 4};
    case ElementType::f16: return {1, 2};
    case ElementType::bf16: return {1, 2};
    case ElementType::q4_0: return {kLegacyBlockValues, kQ4_0BlockBytes};
    case ElementType::q4_1: return {kLegacyBlockValues, kQ4_1BlockBytes};
    case ElementType::q5_0: return {kLegacyBlockValues, kQ5_0BlockBytes};
    case ElementType::q5_1: return {kLegacyBlockValues, kQ5_1BlockBytes};
    case ElementType::q8_0: return {kLegacyBlockValues, kQ8_0BlockBytes};
    case ElementType::q4_k: return {kSuperBlockValues, kQ4_KBlockBytes};
    case ElementType::q5_k: return {kSuperBlockValues, kQ5_KBlockBytes};
    case ElementType::q6_k: return {kSuperBlockValues, kQ6_KBlockBytes};
  }
  return {1, 4};
}

Result<uint64_t> encoded_bytes(ElementType type, uint64_t values) {
  const ElementBlock b = element_block(type);
  ATTENDRE_REQUIRE(values % b.values == 0, std::string(to_string(type)) + " holds whole blocks of " + std::to_string(b.values) +
                                      " values, not " + std::to_string(values));
  return values / b.values * b.bytes;
}

}  // namespace attendre
