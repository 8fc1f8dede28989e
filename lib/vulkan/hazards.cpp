#include "vulkan/hazards.hpp"

namespace attendre::vk {

const BufferAccess* HazardTracker::conflict(const BufferAccess& next) const {
  for (const BufferAccess& earlier : pending_) {
    if (earlier.buffer != next.buffer || earlier.end <= next.begin || next.end <= earlier.begin) continue;
    if (earlier.writes || next.writes) return &earlier;
  }
  return nullptr;
}

}  // namespace attendre::vk
