// VkResult to a Status: out-of-memory and device-lost keep their own codes
// so callers can react (retry smaller, recreate the context).
#pragma once

#include "vulkan/api.hpp"

#include <attendre/status.hpp>

namespace attendre::vk {

const char* result_name(VkResult result);

// Ok for VK_SUCCESS; else the failure naming `what` and the result
// ("vkCreateBuffer failed: VK_ERROR_OUT_OF_DEVICE_MEMORY (-2)").
Status checked(VkResult result, const char* what);

}  // namespace attendre::vk
