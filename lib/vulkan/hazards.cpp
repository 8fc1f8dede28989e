#include "vulkan/hazards.hpp"

#include "vulkan/buffer.hpp"

namespace attendre::vk {
namespace {

// One VkBuffer: the same wrapper, or two wrappers of one handle (an
// application's buffer borrowed once as an input and once as an output).
bool same_buffer(const Buffer* a, const Buffer* b) {
  return a == b || (a && b && a->handle() == b->handle());
}

}  // namespace

const BufferAccess* HazardTracker::conflict(const BufferAccess& next) const {
  for (const BufferAccess& earlier : pending_) {
    if (!same_buffer(earlier.buffer, next.buffer) || earlier.end <= next.begin || next.end <= earlier.begin) continue;
    if (earlier.writes || next.writes) return &earlier;
  }
  return nullptr;
}

}  // namespace attendre::vk
