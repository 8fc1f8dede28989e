// Embedding attendre in an application's own Vulkan work (VkFFT's model):
// layers record into the application's command buffer, read and write the
// application's own buffers, and steps the library submits itself return a
// ticket instead of blocking.
#pragma once

#include <vulkan/vulkan.h>

#include <cstdint>
#include <limits>

namespace attendre {

namespace vk {
class Submission;
}

// Bytes [offset, offset + size) of a VkBuffer the application created on
// the context's device, with TRANSFER_SRC (inputs) or TRANSFER_DST (outputs)
// usage. attendre never destroys it.
struct BufferRange {
  VkBuffer buffer = VK_NULL_HANDLE;
  VkDeviceSize offset = 0, size = 0;
};

// The application's commands that come after recorded work and use its
// outputs: the library's last barrier makes its writes visible to them.
struct Consumer {
  VkPipelineStageFlags stages = VK_PIPELINE_STAGE_ALL_COMMANDS_BIT;
  VkAccessFlags access = VK_ACCESS_MEMORY_READ_BIT | VK_ACCESS_MEMORY_WRITE_BIT;
};

// A step the library submitted and has not necessarily finished: wait on it
// or poll it, then collect its results from the object that submitted it.
// Valid while that object lives.
class Ticket {
 public:
  Ticket() = default;
  // Whether the step finished on the device; never blocks.
  bool ready() const;
  // Blocks up to `timeout_ns` (default: forever); true once it finished.
  bool wait(uint64_t timeout_ns = std::numeric_limits<uint64_t>::max()) const;
  // The step's number on its layer, from 0.
  uint64_t step() const { return step_; }

 private:
  friend struct TicketAccess;
  vk::Submission* submission_ = nullptr;
  uint64_t submitted_ = 0;  // the submission's count once this step was submitted
  uint64_t step_ = 0;
};

}  // namespace attendre
