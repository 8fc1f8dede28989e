#include "vulkan/device_select.hpp"

#include "vulkan/check.hpp"
#include "core/try.hpp"

#include <attendre/error.hpp>

#include <algorithm>
#include <cctype>
#include <optional>

namespace attendre::vk {
namespace {

const char* type_name(VkPhysicalDeviceType type) {
  switch (type) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: return "discrete";
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: return "integrated";
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: return "virtual";
    case VK_PHYSICAL_DEVICE_TYPE_CPU: return "cpu";
    default: return "other";
  }
}

int preference(VkPhysicalDeviceType type) {
  switch (type) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: return 0;
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: return 1;
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: return 2;
    case VK_PHYSICAL_DEVICE_TYPE_CPU: return 3;
    default: return 4;
  }
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

std::optional<uint32_t> compute_family(VkPhysicalDevice device) {
  uint32_t count = 0;
  vkGetPhysicalDeviceQueueFamilyProperties(device, &count, nullptr);
  std::vector<VkQueueFamilyProperties> families(count);
  vkGetPhysicalDeviceQueueFamilyProperties(device, &count, families.data());
  // Prefer a compute-only family (async compute on desktop GPUs), else any.
  std::optional<uint32_t> any;
  for (uint32_t i = 0; i < count; ++i) {
    if (!(families[i].queueFlags & VK_QUEUE_COMPUTE_BIT)) continue;
    if (!(families[i].queueFlags & VK_QUEUE_GRAPHICS_BIT)) return i;
    if (!any) any = i;
  }
  return any;
}

}  // namespace

std::string describe_device(VkPhysicalDevice device, uint32_t index) {
  VkPhysicalDeviceProperties p;
  vkGetPhysicalDeviceProperties(device, &p);
  return std::to_string(index) + ": " + p.deviceName + " [" + type_name(p.deviceType) + ", Vulkan " +
         std::to_string(VK_API_VERSION_MAJOR(p.apiVersion)) + "." + std::to_string(VK_API_VERSION_MINOR(p.apiVersion)) +
         "." + std::to_string(VK_API_VERSION_PATCH(p.apiVersion)) + "]";
}

Result<DeviceChoice> select_device(VkInstance instance, const std::string& selector) {
  uint32_t count = 0;
  ATTENDRE_TRY(checked(vkEnumeratePhysicalDevices(instance, &count, nullptr), "vkEnumeratePhysicalDevices"));
  std::vector<VkPhysicalDevice> devices(count);
  ATTENDRE_TRY(checked(vkEnumeratePhysicalDevices(instance, &count, devices.data()), "vkEnumeratePhysicalDevices"));
  if (devices.empty()) return Status{ErrorCode::unsupported, "no Vulkan device found (is a Vulkan driver installed?)"};

  const bool by_index = !selector.empty() && std::all_of(selector.begin(), selector.end(), ::isdigit);
  std::vector<std::string> rejected;
  std::optional<DeviceChoice> best;
  int best_rank = 1 << 30;
  for (uint32_t i = 0; i < count; ++i) {
    VkPhysicalDeviceProperties p;
    vkGetPhysicalDeviceProperties(devices[i], &p);
    const std::string label = describe_device(devices[i], i);
    if (by_index && std::to_string(i) != selector) continue;
    if (!by_index && !selector.empty() && lower(p.deviceName).find(lower(selector)) == std::string::npos) {
      rejected.push_back(label + ": name does not contain '" + selector + "'");
      continue;
    }
    if (p.apiVersion < VK_API_VERSION_1_1) {
      rejected.push_back(label + ": Vulkan 1.1 required");
      continue;
    }
    const std::optional<uint32_t> family = compute_family(devices[i]);
    if (!family) {
      rejected.push_back(label + ": no compute queue");
      continue;
    }
    const int rank = preference(p.deviceType) * 1000 + static_cast<int>(i);
    if (rank < best_rank) best_rank = rank, best = DeviceChoice{devices[i], *family};
  }
  if (best) return *best;
  std::string why = selector.empty() ? "no usable Vulkan device" : "no Vulkan device matches '" + selector + "'";
  if (by_index) why += " (there are " + std::to_string(count) + " devices)";
  for (const std::string& r : rejected) why += "; " + r;
  return Status{ErrorCode::unsupported, why};
}

}  // namespace attendre::vk
