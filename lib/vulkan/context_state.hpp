// What a Context holds for attendre's own objects, out of the public
// header: the pipeline cache, the command pool, the debug-label entry point,
// the fence timeout, and the device memory attendre holds.
#pragma once

#include "vulkan/pipeline.hpp"

#include <attendre/context.hpp>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

namespace attendre::vk {

// DeviceCaps::max_groups_per_dispatch unless overridden: unlimited
// (0xFFFFFFFF) on discrete GPUs, 1024 elsewhere (device_caps.cpp says why).
uint32_t default_groups_per_dispatch(VkPhysicalDeviceType type);

struct ContextState {
  explicit ContextState(Context& context) : pipelines(context) {}

  PipelineCache pipelines;
  VkCommandPool command_pool = VK_NULL_HANDLE;
  PFN_vkCmdInsertDebugUtilsLabelEXT debug_label = nullptr;  // when VK_EXT_debug_utils is enabled
  uint64_t fence_timeout_ns = 60'000'000'000ull;
  uint64_t device_memory_bytes = 0;  // held by vkAllocateMemory calls of attendre's objects
  uint64_t peak_device_memory_bytes = 0;  // the most device_memory_bytes has been

  void add_device_memory(uint64_t bytes) {
    device_memory_bytes += bytes;
    peak_device_memory_bytes = std::max(peak_device_memory_bytes, device_memory_bytes);
  }
  std::vector<std::string> messages;  // validation messages since the last clear

  // Timeline semaphores (vk::Submission's) are never destroyed while the
  // device runs: destroying one soon after the fence of its last submission
  // signalled left lavapipe's (Mesa 22.3) queue thread blocked for good, in
  // the full suite under load. A finished Submission hands its semaphore
  // back with the value it reached; the next one continues from there, and
  // Context::release destroys them all once the device is idle.
  struct Timeline {
    VkSemaphore semaphore = VK_NULL_HANDLE;
    uint64_t value = 0;
  };
  std::vector<Timeline> spare_timelines;
  std::vector<VkSemaphore> timelines;  // every one created
  // vkWaitSemaphores (KHR or core): before destroying them, the context
  // waits until each reached its value, so that the driver is done signalling it.
  PFN_vkWaitSemaphoresKHR wait_semaphores = nullptr;
};

// The state of `context`: the public header keeps it private, so that
// nothing outside the library reaches attendre's internals through it.
struct ContextAccess {
  static ContextState& state(const Context& context) { return *context.state_; }
};
inline ContextState& state_of(const Context& context) { return ContextAccess::state(context); }

}  // namespace attendre::vk
