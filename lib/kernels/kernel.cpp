#include "kernels/kernel.hpp"

#include "vulkan/buffer.hpp"
#include "vulkan/context_state.hpp"
#include "core/fail.hpp"

#include <attendre/error.hpp>

namespace attendre::kernels {

Kernel::Kernel(Context& context, vk::DescriptorArena& arena, ShaderId shader, uint32_t push_bytes,
               std::vector<uint32_t> specialization, std::initializer_list<vk::BufferBinding> bindings) {
  vk::PipelineKey key{shader, static_cast<uint32_t>(bindings.size()), push_bytes, std::move(specialization)};
  pipeline_ = &context.state().pipelines.get(key);
  set_ = arena.bind(*pipeline_, {bindings.begin(), bindings.size()});
  uint32_t i = 0;
  for (const vk::BufferBinding& b : bindings) {
    const vk::BindingAccess& access = pipeline_->access(i++);
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
        fail(ErrorCode::invalid_argument, std::string(shaders::name(shader)) + ": bindings " + std::to_string(a) +
                                              " and " + std::to_string(b) + " overlap in buffer '" +
                                              x.buffer->label() + "' and one of them is written");
    }
}

ShaderId weight_variant(const Context& context, const WeightVariants& variants, ElementType type,
                        const std::string& what) {
  switch (type) {
    case ElementType::f32: return variants.f32;
    case ElementType::f16:
      if (!context.caps().storage_16bit)
        fail(ErrorCode::unsupported, what + ": fp16 weights need storageBuffer16BitAccess, which " +
                                         context.caps().name + " lacks");
      return variants.f16;
    default:
      fail(ErrorCode::unsupported, what + ": " + std::string(to_string(type)) +
                                       " weights have no decoding kernel yet (F32 and F16 do)");
  }
}

bool in_place(const vk::BufferBinding& in, const vk::BufferBinding& out, const char* kernel) {
  if (!in.overlaps(out)) return false;
  require(in == out, std::string(kernel) + ": output and input bindings overlap without being the same range");
  return true;
}

}  // namespace attendre::kernels
