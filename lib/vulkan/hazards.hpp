// The memory accesses recorded since the last barrier of a command buffer,
// and the test of whether a new access must wait for them: read after
// write, write after read and write after write on overlapping byte ranges
// of one buffer (the hazards of the Vulkan memory model that the validation
// layer's synchronization checks report). Reads after reads never wait. One
// buffer is one VkBuffer: two vk::Buffer wrapping the same handle (an
// application's buffer borrowed as an input and as an output) are one.
#pragma once

#include <vulkan/vulkan.h>

#include <cstdint>
#include <vector>

namespace attendre::vk {

class Buffer;

// Bytes [begin, end) of one buffer, read or written by one command.
struct BufferAccess {
  const Buffer* buffer = nullptr;
  VkDeviceSize begin = 0, end = 0;
  bool reads = false, writes = false;
  const char* command = "";  // shader or transfer name, for barrier reasons
};

class HazardTracker {
 public:
  // The earliest pending access that `next` must wait for, or nullptr.
  const BufferAccess* conflict(const BufferAccess& next) const;
  void add(const BufferAccess& access) { pending_.push_back(access); }
  // A barrier was recorded: everything pending is now ordered before what follows.
  void clear() { pending_.clear(); }
  bool empty() const { return pending_.empty(); }

 private:
  std::vector<BufferAccess> pending_;
};

}  // namespace attendre::vk
