// An application's own Vulkan objects for the embedding tests (the C++
// API's and the C API's): an instance with the validation layer reporting to
// its own messenger, a device, a command buffer and buffers, made the way an
// application would, so that attendre only ever adopts them.
#pragma once

#include "support.hpp"
#include "vulkan/api.hpp"

#include <attendre/context.hpp>

#include <doctest/doctest.h>

#include <string>
#include <vector>

namespace attendre::test {

// Calls the loaded entry points the library uses (vulkan/api.hpp): the
// test is an application that loads Vulkan the same way.
using namespace attendre::vk;

inline void ok(VkResult r, const char* what) { REQUIRE_MESSAGE(r == VK_SUCCESS, what << " returned " << r); }

inline VKAPI_ATTR VkBool32 VKAPI_CALL collect(VkDebugUtilsMessageSeverityFlagBitsEXT, VkDebugUtilsMessageTypeFlagsEXT,
                                       const VkDebugUtilsMessengerCallbackDataEXT* data, void* user) {
  static_cast<std::vector<std::string>*>(user)->push_back(data->pMessage ? data->pMessage : "");
  return VK_FALSE;
}

// The application's own Vulkan objects: instance with the validation layer
// (synchronization checks on) reporting to its own messenger, a device with
// one compute queue, a command pool, one command buffer and a fence.
struct App {
  VkInstance instance = VK_NULL_HANDLE;
  VkDebugUtilsMessengerEXT messenger = VK_NULL_HANDLE;
  VkPhysicalDevice physical = VK_NULL_HANDLE;
  VkDevice device = VK_NULL_HANDLE;
  VkQueue queue = VK_NULL_HANDLE;
  uint32_t family = 0;
  VkCommandPool pool = VK_NULL_HANDLE;
  VkCommandBuffer cb = VK_NULL_HANDLE;
  VkFence fence = VK_NULL_HANDLE;
  bool timeline = false;  // the device was created with timeline semaphores (when it has them)
  // Created with 16-bit and 8-bit storage and shaderFloat16 (App(true), where present).
  bool storage_16bit = false, storage_8bit = false, float16 = false;
  PFN_vkSignalSemaphoreKHR signal_semaphore = nullptr;
  PFN_vkGetSemaphoreCounterValueKHR semaphore_counter = nullptr;
  std::vector<std::string> messages;

  explicit App(bool narrow_types = false) {
    test::gpu();  // loads the Vulkan loader's entry points, as an application would have
    VkApplicationInfo app{VK_STRUCTURE_TYPE_APPLICATION_INFO};
    app.apiVersion = VK_API_VERSION_1_1;
    const char* layer = "VK_LAYER_KHRONOS_validation";
    const char* extensions[] = {VK_EXT_DEBUG_UTILS_EXTENSION_NAME, VK_EXT_VALIDATION_FEATURES_EXTENSION_NAME};
    VkValidationFeatureEnableEXT sync = VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT;
    VkValidationFeaturesEXT features{VK_STRUCTURE_TYPE_VALIDATION_FEATURES_EXT};
    features.enabledValidationFeatureCount = 1;
    features.pEnabledValidationFeatures = &sync;
    VkDebugUtilsMessengerCreateInfoEXT messenger_info{VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT};
    messenger_info.messageSeverity =
        VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT;
    messenger_info.messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT |
                                 VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                                 VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT;
    messenger_info.pfnUserCallback = collect;
    messenger_info.pUserData = &messages;
    messenger_info.pNext = &features;
    VkInstanceCreateInfo info{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
    info.pApplicationInfo = &app;
    info.enabledLayerCount = 1;
    info.ppEnabledLayerNames = &layer;
    info.enabledExtensionCount = 2;
    info.ppEnabledExtensionNames = extensions;
    info.pNext = &messenger_info;
    ok(vkCreateInstance(&info, nullptr, &instance), "vkCreateInstance");
    auto create = reinterpret_cast<PFN_vkCreateDebugUtilsMessengerEXT>(
        vkGetInstanceProcAddr(instance, "vkCreateDebugUtilsMessengerEXT"));
    messenger_info.pNext = nullptr;
    ok(create(instance, &messenger_info, nullptr, &messenger), "vkCreateDebugUtilsMessengerEXT");

    uint32_t count = 1;
    vkEnumeratePhysicalDevices(instance, &count, &physical);
    REQUIRE(count >= 1);
    uint32_t families = 0;
    vkGetPhysicalDeviceQueueFamilyProperties(physical, &families, nullptr);
    std::vector<VkQueueFamilyProperties> props(families);
    vkGetPhysicalDeviceQueueFamilyProperties(physical, &families, props.data());
    while (family < families && !(props[family].queueFlags & VK_QUEUE_COMPUTE_BIT)) ++family;
    REQUIRE(family < families);
    const float priority = 1.0f;
    VkDeviceQueueCreateInfo queue_info{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
    queue_info.queueFamilyIndex = family;
    queue_info.queueCount = 1;
    queue_info.pQueuePriorities = &priority;
    VkDeviceCreateInfo device_info{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO};
    device_info.queueCreateInfoCount = 1;
    device_info.pQueueCreateInfos = &queue_info;
    // Timeline semaphores when the device has them, as an application
    // chaining on attendre's tickets would enable them; with `narrow_types`,
    // also 16-bit and 8-bit storage and shaderFloat16 where present, as an
    // application running fp16 and Q8_0 models would.
    VkPhysicalDeviceTimelineSemaphoreFeaturesKHR timeline_features{
        VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_TIMELINE_SEMAPHORE_FEATURES_KHR};
    VkPhysicalDevice16BitStorageFeatures storage16_features{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES};
    VkPhysicalDevice8BitStorageFeaturesKHR storage8_features{
        VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_8BIT_STORAGE_FEATURES_KHR};
    VkPhysicalDeviceShaderFloat16Int8FeaturesKHR float16_features{
        VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES_KHR};
    uint32_t extension_count = 0;
    vkEnumerateDeviceExtensionProperties(physical, nullptr, &extension_count, nullptr);
    std::vector<VkExtensionProperties> device_extensions(extension_count);
    vkEnumerateDeviceExtensionProperties(physical, nullptr, &extension_count, device_extensions.data());
    auto has = [&](const char* name) {
      for (const VkExtensionProperties& e : device_extensions)
        if (std::string(e.extensionName) == name) return true;
      return false;
    };
    // Queries, then enables, the features of each extension present.
    std::vector<const char*> enabled;
    void* chain = nullptr;
    auto query = [&](auto& found, const char* extension) {
      if (extension && !has(extension)) return false;
      VkPhysicalDeviceFeatures2 features2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
      features2.pNext = &found;
      vkGetPhysicalDeviceFeatures2(physical, &features2);
      found.pNext = chain;
      chain = &found;
      if (extension) enabled.push_back(extension);
      return true;
    };
    timeline = query(timeline_features, VK_KHR_TIMELINE_SEMAPHORE_EXTENSION_NAME) &&
               timeline_features.timelineSemaphore == VK_TRUE;
    if (!timeline && !enabled.empty()) {  // the extension without the feature: enable neither
      enabled.pop_back();
      chain = nullptr;
    }
    if (narrow_types) {
      query(storage16_features, nullptr);  // core in Vulkan 1.1
      storage_16bit = storage16_features.storageBuffer16BitAccess == VK_TRUE;
      storage16_features = {VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES, storage16_features.pNext};
      storage16_features.storageBuffer16BitAccess = storage_16bit ? VK_TRUE : VK_FALSE;
      if (query(storage8_features, VK_KHR_8BIT_STORAGE_EXTENSION_NAME)) {
        storage_8bit = storage8_features.storageBuffer8BitAccess == VK_TRUE;
        storage8_features = {VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_8BIT_STORAGE_FEATURES_KHR, storage8_features.pNext};
        storage8_features.storageBuffer8BitAccess = storage_8bit ? VK_TRUE : VK_FALSE;
      }
      if (query(float16_features, VK_KHR_SHADER_FLOAT16_INT8_EXTENSION_NAME)) {
        float16 = float16_features.shaderFloat16 == VK_TRUE;
        float16_features = {VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES_KHR,
                            float16_features.pNext};
        float16_features.shaderFloat16 = float16 ? VK_TRUE : VK_FALSE;
      }
    }
    device_info.pNext = chain;
    device_info.enabledExtensionCount = static_cast<uint32_t>(enabled.size());
    device_info.ppEnabledExtensionNames = enabled.data();
    ok(vkCreateDevice(physical, &device_info, nullptr, &device), "vkCreateDevice");
    if (timeline) {
      signal_semaphore =
          reinterpret_cast<PFN_vkSignalSemaphoreKHR>(vkGetDeviceProcAddr(device, "vkSignalSemaphoreKHR"));
      semaphore_counter = reinterpret_cast<PFN_vkGetSemaphoreCounterValueKHR>(
          vkGetDeviceProcAddr(device, "vkGetSemaphoreCounterValueKHR"));
    }
    vkGetDeviceQueue(device, family, 0, &queue);
    VkCommandPoolCreateInfo pool_info{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
    pool_info.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
    pool_info.queueFamilyIndex = family;
    ok(vkCreateCommandPool(device, &pool_info, nullptr, &pool), "vkCreateCommandPool");
    VkCommandBufferAllocateInfo cb_info{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
    cb_info.commandPool = pool;
    cb_info.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
    cb_info.commandBufferCount = 1;
    ok(vkAllocateCommandBuffers(device, &cb_info, &cb), "vkAllocateCommandBuffers");
    VkFenceCreateInfo fence_info{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    ok(vkCreateFence(device, &fence_info, nullptr, &fence), "vkCreateFence");
  }
  ~App() {
    vkDeviceWaitIdle(device);  // the application's own choice on its own device
    vkDestroyFence(device, fence, nullptr);
    vkDestroyCommandPool(device, pool, nullptr);
    vkDestroyDevice(device, nullptr);
    auto destroy = reinterpret_cast<PFN_vkDestroyDebugUtilsMessengerEXT>(
        vkGetInstanceProcAddr(instance, "vkDestroyDebugUtilsMessengerEXT"));
    destroy(instance, messenger, nullptr);
    vkDestroyInstance(instance, nullptr);
  }
  App(const App&) = delete;
  App& operator=(const App&) = delete;

  ExternalDevice external() const {
    ExternalDevice e{instance, physical, device, queue, family, storage_16bit};
    e.timeline_semaphore_enabled = timeline;
    e.storage_8bit_enabled = storage_8bit;
    e.float16_enabled = float16;
    return e;
  }

  void begin() {
    ok(vkResetCommandBuffer(cb, 0), "vkResetCommandBuffer");
    VkCommandBufferBeginInfo info{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
    info.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
    ok(vkBeginCommandBuffer(cb, &info), "vkBeginCommandBuffer");
  }
  // Ends, submits with the application's fence and waits on it.
  void submit_and_wait() {
    submit();
    wait();
  }
  // Ends and submits with the application's fence; the commands first wait,
  // on the device, for `wait` to reach `value` (a timeline semaphore, e.g. a
  // ticket's) when given.
  void submit(VkSemaphore wait = VK_NULL_HANDLE, uint64_t value = 0) {
    ok(vkEndCommandBuffer(cb), "vkEndCommandBuffer");
    VkSubmitInfo info{VK_STRUCTURE_TYPE_SUBMIT_INFO};
    info.commandBufferCount = 1;
    info.pCommandBuffers = &cb;
    const VkPipelineStageFlags stage = VK_PIPELINE_STAGE_TRANSFER_BIT;
    VkTimelineSemaphoreSubmitInfoKHR values{VK_STRUCTURE_TYPE_TIMELINE_SEMAPHORE_SUBMIT_INFO_KHR};
    values.waitSemaphoreValueCount = 1;
    values.pWaitSemaphoreValues = &value;
    if (wait) {
      info.pNext = &values;
      info.waitSemaphoreCount = 1;
      info.pWaitSemaphores = &wait;
      info.pWaitDstStageMask = &stage;
    }
    ok(vkResetFences(device, 1, &fence), "vkResetFences");
    ok(vkQueueSubmit(queue, 1, &info, fence), "vkQueueSubmit");
  }
  void wait() { ok(vkWaitForFences(device, 1, &fence, VK_TRUE, 60'000'000'000ull), "vkWaitForFences"); }
  // A timeline semaphore's current value, read by the host.
  uint64_t counter(VkSemaphore semaphore) const {
    uint64_t value = 0;
    ok(semaphore_counter(device, semaphore, &value), "vkGetSemaphoreCounterValueKHR");
    return value;
  }
  void check_no_messages() {
    for (const std::string& m : messages) FAIL_CHECK("application's validation: " << m);
    messages.clear();
  }
};

// A timeline semaphore of the application's (the device must have them).
struct AppTimeline {
  const App& app;
  VkSemaphore semaphore = VK_NULL_HANDLE;
  explicit AppTimeline(const App& a) : app(a) {
    VkSemaphoreTypeCreateInfoKHR type{VK_STRUCTURE_TYPE_SEMAPHORE_TYPE_CREATE_INFO_KHR};
    type.semaphoreType = VK_SEMAPHORE_TYPE_TIMELINE_KHR;
    VkSemaphoreCreateInfo info{VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO};
    info.pNext = &type;
    ok(vkCreateSemaphore(app.device, &info, nullptr, &semaphore), "vkCreateSemaphore");
  }
  ~AppTimeline() { vkDestroySemaphore(app.device, semaphore, nullptr); }
  AppTimeline(const AppTimeline&) = delete;
  AppTimeline& operator=(const AppTimeline&) = delete;
  // The host signals `value`.
  void signal(uint64_t value) const {
    VkSemaphoreSignalInfoKHR info{VK_STRUCTURE_TYPE_SEMAPHORE_SIGNAL_INFO_KHR};
    info.semaphore = semaphore;
    info.value = value;
    ok(app.signal_semaphore(app.device, &info), "vkSignalSemaphoreKHR");
  }
};

// GPU stack rows (hidden states, logits) against the float64 reference, at
// the tolerance of the GPU-vs-reference stack tests (test_stack.cpp).
inline void check_stack_rows(const std::vector<float>& want, const std::vector<float>& got, const std::string& when) {
  INFO(when);
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < want.size(); ++i) CHECK(got[i] == doctest::Approx(want[i]).epsilon(1e-3).scale(1.0));
}

// A buffer of the application's, host-visible (mapped, coherent) or device-local.
struct AppBuffer {
  const App& app;
  VkBuffer buffer = VK_NULL_HANDLE;
  VkDeviceMemory memory = VK_NULL_HANDLE;
  void* mapped = nullptr;

  AppBuffer(const App& a, VkDeviceSize bytes, bool host) : app(a) {
    VkBufferCreateInfo info{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
    info.size = bytes;
    info.usage = VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT;
    ok(vkCreateBuffer(app.device, &info, nullptr, &buffer), "vkCreateBuffer");
    VkMemoryRequirements req;
    vkGetBufferMemoryRequirements(app.device, buffer, &req);
    VkPhysicalDeviceMemoryProperties props;
    vkGetPhysicalDeviceMemoryProperties(app.physical, &props);
    const VkMemoryPropertyFlags want =
        host ? VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT : VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT;
    uint32_t type = 0;
    while (type < props.memoryTypeCount &&
           (!(req.memoryTypeBits & (1u << type)) || (props.memoryTypes[type].propertyFlags & want) != want))
      ++type;
    REQUIRE(type < props.memoryTypeCount);
    VkMemoryAllocateInfo alloc{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
    alloc.allocationSize = req.size;
    alloc.memoryTypeIndex = type;
    ok(vkAllocateMemory(app.device, &alloc, nullptr, &memory), "vkAllocateMemory");
    ok(vkBindBufferMemory(app.device, buffer, memory, 0), "vkBindBufferMemory");
    if (host) ok(vkMapMemory(app.device, memory, 0, VK_WHOLE_SIZE, 0, &mapped), "vkMapMemory");
  }
  ~AppBuffer() {
    vkDestroyBuffer(app.device, buffer, nullptr);
    vkFreeMemory(app.device, memory, nullptr);
  }
  AppBuffer(const AppBuffer&) = delete;
  AppBuffer& operator=(const AppBuffer&) = delete;
};

inline void copy(VkCommandBuffer cb, const AppBuffer& from, VkDeviceSize from_offset, const AppBuffer& to,
          VkDeviceSize to_offset, VkDeviceSize bytes) {
  if (bytes == 0) return;
  const VkBufferCopy region{from_offset, to_offset, bytes};
  vkCmdCopyBuffer(cb, from.buffer, to.buffer, 1, &region);
}

// The application's own consumer of recorded outputs: a copy into its
// host-visible `to`, then its barrier to the host's reads.
inline void read_back(VkCommandBuffer cb, const AppBuffer& from, VkDeviceSize from_offset, const AppBuffer& to,
                      VkDeviceSize bytes) {
  copy(cb, from, from_offset, to, 0, bytes);
  VkMemoryBarrier to_host{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
  to_host.srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT;
  to_host.dstAccessMask = VK_ACCESS_HOST_READ_BIT;
  vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &to_host, 0, nullptr, 0,
                       nullptr);
}

}  // namespace attendre::test
