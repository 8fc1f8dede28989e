#include "vulkan/check.hpp"

#include <attendre/error.hpp>

#include <string>
#include <utility>

namespace attendre::vk {

const char* result_name(VkResult result) {
  switch (result) {
    case VK_SUCCESS: return "VK_SUCCESS";
    case VK_NOT_READY: return "VK_NOT_READY";
    case VK_TIMEOUT: return "VK_TIMEOUT";
    case VK_ERROR_OUT_OF_HOST_MEMORY: return "VK_ERROR_OUT_OF_HOST_MEMORY";
    case VK_ERROR_OUT_OF_DEVICE_MEMORY: return "VK_ERROR_OUT_OF_DEVICE_MEMORY";
    case VK_ERROR_INITIALIZATION_FAILED: return "VK_ERROR_INITIALIZATION_FAILED";
    case VK_ERROR_DEVICE_LOST: return "VK_ERROR_DEVICE_LOST";
    case VK_ERROR_MEMORY_MAP_FAILED: return "VK_ERROR_MEMORY_MAP_FAILED";
    case VK_ERROR_LAYER_NOT_PRESENT: return "VK_ERROR_LAYER_NOT_PRESENT";
    case VK_ERROR_EXTENSION_NOT_PRESENT: return "VK_ERROR_EXTENSION_NOT_PRESENT";
    case VK_ERROR_FEATURE_NOT_PRESENT: return "VK_ERROR_FEATURE_NOT_PRESENT";
    case VK_ERROR_INCOMPATIBLE_DRIVER: return "VK_ERROR_INCOMPATIBLE_DRIVER";
    case VK_ERROR_TOO_MANY_OBJECTS: return "VK_ERROR_TOO_MANY_OBJECTS";
    case VK_ERROR_OUT_OF_POOL_MEMORY: return "VK_ERROR_OUT_OF_POOL_MEMORY";
    default: return "VkResult error";
  }
}

Status checked(VkResult result, const char* what) {
  if (result == VK_SUCCESS) return {};
  std::string message =
      std::string(what) + " failed: " + result_name(result) + " (" + std::to_string(static_cast<int>(result)) + ")";
  switch (result) {
    case VK_ERROR_OUT_OF_DEVICE_MEMORY:
      return {ErrorCode::out_of_device_memory, std::move(message)};
    case VK_ERROR_OUT_OF_HOST_MEMORY:
      return {ErrorCode::out_of_host_memory, std::move(message)};
    case VK_ERROR_DEVICE_LOST:
      return {ErrorCode::device_lost, std::move(message)};
    case VK_ERROR_FEATURE_NOT_PRESENT:
    case VK_ERROR_EXTENSION_NOT_PRESENT:
    case VK_ERROR_LAYER_NOT_PRESENT:
    case VK_ERROR_INCOMPATIBLE_DRIVER:
      return {ErrorCode::unsupported, std::move(message)};
    default:
      return {ErrorCode::vulkan_error, std::move(message)};
  }
}

}  // namespace attendre::vk
