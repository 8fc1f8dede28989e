// Embedding attendre in an application's own Vulkan work (VkFFT's model):
// layers record into the application's command buffer, read and write the
// application's own buffers, and steps the library submits itself return a
// ticket instead of blocking.
#pragma once

#include <vulkan/vulkan.h>

#include <attendre/status.hpp>

#include <cstdint>
#include <limits>
#include <optional>
#include <vector>

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

// A semaphore of the application's that a submitted step waits for before
// its commands run (at `stages`): a binary semaphore (value 0), or a
// timeline semaphore reaching `value` (needs DeviceCaps::timeline_semaphore).
struct SemaphoreWait {
  VkSemaphore semaphore = VK_NULL_HANDLE;
  uint64_t value = 0;
  VkPipelineStageFlags stages = VK_PIPELINE_STAGE_ALL_COMMANDS_BIT;
};

// What a non-blocking submit() also does with the application's objects.
struct SubmitOptions {
  // Semaphores the step's commands wait for (its inputs come from the host,
  // so this orders it after the application's own work, e.g. a step that
  // must not overwrite what that work still reads).
  std::vector<SemaphoreWait> waits;
  // The application's range (TRANSFER_DST usage) receiving the step's
  // emitted rows as record() writes them, packed in emission order: a
  // layer's outputs o[q][h][d], a stack's final hidden rows. The
  // application's work that reads them waits for the ticket's semaphore
  // (chaining), or runs after the ticket's host wait and a barrier of its
  // own from transfer writes.
  std::optional<BufferRange> outputs;
};

// A step the library submitted and has not necessarily finished: wait on it
// or poll it, then collect its results from the object that submitted it.
// Valid while that object lives.
class Ticket {
 public:
  Ticket() = default;
  // Whether the step finished on the device; never blocks. Fails with
  // device_lost when the device was lost.
  Result<bool> ready() const;
  // Blocks up to `timeout_ns` (default: forever); true once it finished,
  // false at the timeout. Fails with device_lost when the device was lost.
  Result<bool> wait(uint64_t timeout_ns = std::numeric_limits<uint64_t>::max()) const;
  // The step's number on the object that submitted it, from 0.
  uint64_t step() const { return step_; }

  // Chaining on the device: with timeline semaphores (Feature::timeline_semaphore),
  // the step signals semaphore() to value() when it completes, so the
  // application's own vkQueueSubmit may wait for it (VkTimelineSemaphoreSubmitInfo)
  // and then read what the step wrote, with no host wait between. Without
  // them (fence fallback) chainable() is false, semaphore() null: only the
  // host waits above work. The semaphore belongs to the submitting object.
  bool chainable() const { return semaphore_ != VK_NULL_HANDLE; }
  VkSemaphore semaphore() const { return semaphore_; }
  uint64_t value() const { return value_; }

 private:
  friend struct TicketAccess;
  vk::Submission* submission_ = nullptr;
  uint64_t submitted_ = 0;  // the submission's count once this step was submitted
  uint64_t step_ = 0;
  VkSemaphore semaphore_ = VK_NULL_HANDLE;
  uint64_t value_ = 0;
};

}  // namespace attendre
