// VkResult to attendre::Error: out-of-memory and device-lost keep their own
// codes so callers can react (retry smaller, recreate the context).
#pragma once

#include "vulkan/api.hpp"

namespace attendre::vk {

const char* result_name(VkResult result);

// Throws attendre::Error naming `what` and the result unless it is VK_SUCCESS.
void check(VkResult result, const char* what);

}  // namespace attendre::vk
