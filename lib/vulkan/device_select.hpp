// Physical device selection that explains itself: every rejected device
// comes back with its reason, and the error names them all.
#pragma once

#include <vulkan/vulkan.h>

#include <attendre/status.hpp>

#include <string>
#include <vector>

namespace attendre::vk {

struct DeviceChoice {
  VkPhysicalDevice device = VK_NULL_HANDLE;
  uint32_t queue_family = 0;
};

// `selector`: empty (preference order discrete, integrated, virtual, CPU),
// a decimal index, or a case-insensitive substring of the device name.
// Fails (unsupported) naming every device and why it was rejected.
Result<DeviceChoice> select_device(VkInstance instance, const std::string& selector);

// "0: llvmpipe (LLVM 15.0.6, 256 bits) [cpu, Vulkan 1.3.230]"
std::string describe_device(VkPhysicalDevice device, uint32_t index);

}  // namespace attendre::vk
