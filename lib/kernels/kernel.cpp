#include "kernels/kernel.hpp"

namespace attendre::kernels {

Kernel::Kernel(Context& context, vk::DescriptorArena& arena, ShaderId shader, uint32_t push_bytes,
               std::vector<uint32_t> specialization, std::initializer_list<vk::BufferBinding> bindings) {
  vk::PipelineKey key{shader, static_cast<uint32_t>(bindings.size()), push_bytes, std::move(specialization)};
  pipeline_ = &context.pipelines().get(key);
  set_ = arena.bind(*pipeline_, {bindings.begin(), bindings.size()});
}

}  // namespace attendre::kernels
