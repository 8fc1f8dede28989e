#include "kernels/kernel.hpp"

#include "vulkan/buffer.hpp"
#include "vulkan/context_state.hpp"
#include "core/try.hpp"

#include "interface/quant.h"

#include <attendre/error.hpp>

namespace attendre::kernels {

Result<Kernel> Kernel::build(Context& context, vk::DescriptorArena& arena, ShaderId shader, uint32_t push_bytes,
                             std::vector<uint32_t> specialization, std::initializer_list<vk::BufferBinding> bindings,
                             bool full_subgroups) {
  uint32_t texel_bindings = 0;
  uint32_t at = 0;
  for (const vk::BufferBinding& b : bindings) texel_bindings |= (b.texel_format != VK_FORMAT_UNDEFINED ? 1u : 0u) << at++;
  vk::PipelineKey key{shader, static_cast<uint32_t>(bindings.size()), texel_bindings, push_bytes,
                      std::move(specialization), full_subgroups};
  Kernel kernel;
  ATTENDRE_TRY_ASSIGN(kernel.pipeline_, vk::state_of(context).pipelines.get(key));
  ATTENDRE_TRY_ASSIGN(kernel.set_, arena.bind(*kernel.pipeline_, {bindings.begin(), bindings.size()}));
  std::vector<vk::BufferUse>& uses_ = kernel.uses_;
  uint32_t i = 0;
  for (const vk::BufferBinding& b : bindings) {
    const vk::BindingAccess& access = kernel.pipeline_->access(i++);
    const VkDeviceSize size = b.range == VK_WHOLE_SIZE ? b.buffer->size() - b.offset : b.range;
    uses_.push_back({b.buffer, b.offset, size, access.reads, access.writes});
  }
  // Two bindings of one dispatch over the same bytes, one of them written,
  // race inside the dispatch and hide the write from hazard tracking: a
  // kernel that updates a buffer in place binds it once.
  for (size_t a = 0; a < uses_.size(); ++a)
    for (size_t b = a + 1; b < uses_.size(); ++b) {
      const vk::BufferUse &x = uses_[a], &y = uses_[b];
      const bool overlap = x.buffer == y.buffer && x.offset < y.offset + y.size && y.offset < x.offset + x.size;
      if (overlap && (x.writes || y.writes))
        return invalid_argument(std::string(shaders::name(shader)) + ": bindings " + std::to_string(a) + " and " +
                                std::to_string(b) + " overlap in buffer '" + x.buffer->label() +
                                "' and one of them is written");
    }
  return kernel;
}

namespace {

// The three products over one weight encoding, for one way of reading A.
struct Products {
  ShaderId gemm, matvec, direct;
};
// Every weight encoding's variant of each weight-reading kernel; the
// products over fp32 A, and over fp16 activations (input_rows.glsl) read by
// 16-bit loads (*_a16) or as unpacked 32-bit words (*_a16_words).
struct WeightVariants {
  ElementType type;
  ShaderId embedding;
  Products f32_input, f16_input, f16_words_input;
};
#define ATTENDRE_PRODUCTS(name, input) \
  {ShaderId::matmul_##name##input, ShaderId::matvec_##name##input, ShaderId::matmul_direct_##name##input}
#define ATTENDRE_WEIGHT_VARIANTS(type, name)                                                          \
  {ElementType::type, ShaderId::embedding_##name, ATTENDRE_PRODUCTS(name, ), ATTENDRE_PRODUCTS(name, _a16), \
   ATTENDRE_PRODUCTS(name, _a16_words)}
constexpr WeightVariants kWeightVariants[] = {
    ATTENDRE_WEIGHT_VARIANTS(f32, f32),   ATTENDRE_WEIGHT_VARIANTS(f16, f16),   ATTENDRE_WEIGHT_VARIANTS(bf16, bf16),
    ATTENDRE_WEIGHT_VARIANTS(q4_0, q4_0), ATTENDRE_WEIGHT_VARIANTS(q4_1, q4_1), ATTENDRE_WEIGHT_VARIANTS(q5_0, q5_0),
    ATTENDRE_WEIGHT_VARIANTS(q5_1, q5_1), ATTENDRE_WEIGHT_VARIANTS(q8_0, q8_0), ATTENDRE_WEIGHT_VARIANTS(q4_k, q4_k),
    ATTENDRE_WEIGHT_VARIANTS(q5_k, q5_k), ATTENDRE_WEIGHT_VARIANTS(q6_k, q6_k),
};
// fp16 read as 32-bit words and unpacked, where 16-bit storage is absent.
constexpr WeightVariants kF16Words = ATTENDRE_WEIGHT_VARIANTS(f16, f16_words);
// Q8_0 quants read as int8 values, where 8-bit storage is present.
constexpr WeightVariants kQ8_0Int8 = ATTENDRE_WEIGHT_VARIANTS(q8_0, q8_0_int8);
// fp16 activations x fp16 weights multiplied in fp16, where half_math().
constexpr Products kF16HalfMath = ATTENDRE_PRODUCTS(f16_a16, _math);
#undef ATTENDRE_PRODUCTS
#undef ATTENDRE_WEIGHT_VARIANTS

std::string decoded_types() {
  std::string names;
  for (const WeightVariants& v : kWeightVariants) names += (names.empty() ? "" : ", ") + std::string(to_string(v.type));
  return names;
}

}  // namespace

bool f16_as_words(const DeviceCaps& caps) { return !caps.storage_16bit || caps.quirks.half_loads_lane_by_lane; }
bool q8_0_as_int8(const DeviceCaps& caps) { return caps.storage_8bit && !caps.quirks.byte_loads_lane_by_lane; }

bool half_math(const DeviceCaps& caps) {
  return caps.float16 && !f16_as_words(caps) && !caps.quirks.half_math_emulated;
}

Result<ShaderId> weight_variant(const Context& context, WeightKernel kernel, ElementType type, const std::string& what,
                                MemoryStorage input) {
  const bool a16 = input == MemoryStorage::f16;
  if (a16 && kernel == WeightKernel::embedding) return invalid_argument(what + ": an embedding reads no activations");
  // fp16 weights and fp16 activations take the same path: 16-bit loads, or
  // unpacked words where 16-bit storage is absent or switched off.
  const bool words = f16_as_words(context.caps());
  for (WeightVariants v : kWeightVariants) {
    if (v.type != type) continue;
    if (type == ElementType::f16 && words) v = kF16Words;
    if (type == ElementType::q8_0 && q8_0_as_int8(context.caps())) v = kQ8_0Int8;
    const bool math = a16 && type == ElementType::f16 && half_math(context.caps());
    const Products& p = !a16 ? v.f32_input : words ? v.f16_words_input : math ? kF16HalfMath : v.f16_input;
    switch (kernel) {
      case WeightKernel::gemm: return p.gemm;
      case WeightKernel::matvec: return p.matvec;
      case WeightKernel::direct: return p.direct;
      case WeightKernel::embedding: return v.embedding;
    }
  }
  return Status{ErrorCode::unsupported, what + ": " + std::string(to_string(type)) +
                                            " weights have no decoding kernel (" + decoded_types() + " do)"};
}

uint32_t decode_unit(ElementType type) {
  switch (type) {
    case ElementType::q4_0:
    case ElementType::q4_1:
    case ElementType::q5_0:
    case ElementType::q5_1:
    case ElementType::q8_0: return kLegacyUnitValues;
    case ElementType::q4_k: return kQ4_KUnitValues;
    case ElementType::q5_k: return kQ5_KUnitValues;
    case ElementType::q6_k: return kQ6_KUnitValues;
    default: return 1;
  }
}

Status check_weight_layout(ElementType type, uint32_t cols, uint32_t offset, const char* what) {
  const ElementBlock b = element_block(type);
  if (b.values == 1) return {};
  ATTENDRE_REQUIRE(cols % b.values == 0, std::string(what) + ": rows of " + std::to_string(cols) +
                                             " values are not whole " + std::string(to_string(type)) + " blocks of " +
                                             std::to_string(b.values));
  ATTENDRE_REQUIRE(offset % 2 == 0, std::string(what) + ": " + std::string(to_string(type)) +
                                        " blocks start at even bytes, not at byte " + std::to_string(offset));
  return {};
}

Result<bool> in_place(const vk::BufferBinding& in, const vk::BufferBinding& out, const char* kernel) {
  if (!in.overlaps(out)) return false;
  ATTENDRE_REQUIRE(in == out, std::string(kernel) + ": output and input bindings overlap without being the same range");
  return true;
}

}  // namespace attendre::kernels
