#include "vulkan/api.hpp"
#include "vulkan/check.hpp"
#include "vulkan/context_state.hpp"
#include "vulkan/device_caps.hpp"
#include "vulkan/device_select.hpp"
#include "vulkan/environment.hpp"
#include "vulkan/pipeline.hpp"
#include "core/try.hpp"

#include <attendre/context.hpp>
#include <attendre/diagnostics.hpp>
#include <attendre/error.hpp>

#include <algorithm>
#include <cstdlib>
#include <cstring>

namespace attendre {
// The loaded entry points (vulkan/api.hpp) by their usual names.
using namespace vk;

namespace {

constexpr const char* kValidationLayer = "VK_LAYER_KHRONOS_validation";

Result<Validation> env_validation() {
  const char* value = std::getenv("ATTENDRE_VALIDATION");
  if (!value || *value == '\0' || std::strcmp(value, "0") == 0) return Validation::off;
  if (std::strcmp(value, "1") == 0) return Validation::synchronization;
  if (std::strcmp(value, "core") == 0) return Validation::core;
  if (std::strcmp(value, "gpu") == 0) return Validation::gpu_assisted;
  return invalid_argument(std::string("ATTENDRE_VALIDATION must be 0, 1 (core and synchronization), "
                                      "core or gpu (GPU-assisted), got '") +
                          value + "'");
}

VKAPI_ATTR VkBool32 VKAPI_CALL record_message(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                                              VkDebugUtilsMessageTypeFlagsEXT,
                                              const VkDebugUtilsMessengerCallbackDataEXT* data, void* user) {
  auto* messages = static_cast<std::vector<std::string>*>(user);
  const char* level = severity >= VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT ? "error" : "warning";
  messages->push_back(std::string(level) + ": " + (data->pMessage ? data->pMessage : "(no message)"));
  return VK_FALSE;  // never abort the call that triggered the message
}

bool has_layer(const char* name) {
  uint32_t count = 0;
  vkEnumerateInstanceLayerProperties(&count, nullptr);
  std::vector<VkLayerProperties> layers(count);
  vkEnumerateInstanceLayerProperties(&count, layers.data());
  return std::any_of(layers.begin(), layers.end(),
                     [&](const VkLayerProperties& l) { return std::strcmp(l.layerName, name) == 0; });
}


}  // namespace


Result<std::unique_ptr<Context>> Context::create(const ContextOptions& options) {
  std::unique_ptr<Context> context(new Context(Unset{}));
  ATTENDRE_TRY(context->initialize(options));
  return context;
}

Result<std::unique_ptr<Context>> Context::adopt(const ExternalDevice& external, const LimitOverrides& limits) {
  std::unique_ptr<Context> context(new Context(Unset{}));
  ATTENDRE_TRY(context->initialize(external, limits));
  return context;
}

// A failure releases what was created, so the throwing constructors (whose
// destructor never runs then) leak nothing either.
Status Context::initialize(const ContextOptions& options) {
  Status status = set_up(options);
  if (!status.ok()) release();
  return status;
}

Status Context::initialize(const ExternalDevice& external, const LimitOverrides& limits) {
  Status status = set_up(external, limits);
  if (!status.ok()) release();
  return status;
}

Status Context::set_up(const ContextOptions& options) {
  allocator_ = options.allocator;
  state_.reset(new vk::ContextState(*this));
  Validation validation = Validation::off;
  if (options.validation) {
    validation = *options.validation;
  } else {
    ATTENDRE_TRY_ASSIGN(validation, env_validation());
  }
  ATTENDRE_TRY(create_instance(validation));
  const std::string selector = options.device.empty() ? env_string("ATTENDRE_DEVICE") : options.device;
  ATTENDRE_TRY_ASSIGN(const vk::DeviceChoice choice, vk::select_device(instance_, selector));
  physical_device_ = choice.device;
  queue_family_ = choice.queue_family;
  ATTENDRE_TRY_ASSIGN(caps_, query_caps(physical_device_, queue_family_));
  ATTENDRE_TRY(apply_switches(caps_, options));
  ATTENDRE_TRY(create_device());
  LimitOverrides limits;
  if (options.limits) {
    limits = *options.limits;
  } else {
    ATTENDRE_TRY_ASSIGN(const bool portable, env_flag("ATTENDRE_PORTABLE_LIMITS"));
    if (portable) limits = LimitOverrides::portable();
    ATTENDRE_TRY_ASSIGN(const std::optional<uint32_t> groups, env_count("ATTENDRE_MAX_GROUPS_PER_DISPATCH"));
    if (groups) limits.max_groups_per_dispatch = groups;
  }
  ATTENDRE_TRY_ASSIGN(caps_.kernel_style, kernel_style(options.kernels, caps_));
  return finish_setup(limits, options.fence_timeout_ms);
}

Status Context::set_up(const ExternalDevice& external, const LimitOverrides& limits) {
  owns_device_ = false;
  allocator_ = external.allocator;
  state_.reset(new vk::ContextState(*this));
  ATTENDRE_REQUIRE(external.instance && external.physical_device && external.device && external.queue,
                   "ExternalDevice needs instance, physical device, device and queue");
  ATTENDRE_TRY(vk::load_global_commands(external.get_instance_proc_addr));
  ATTENDRE_TRY(vk::load_instance_commands(external.instance));
  instance_ = external.instance;
  physical_device_ = external.physical_device;
  device_ = external.device;
  queue_ = external.queue;
  queue_family_ = external.queue_family;
  ATTENDRE_TRY_ASSIGN(caps_, query_caps(physical_device_, queue_family_));
  keep_enabled(caps_, external);
  ATTENDRE_TRY(apply_switches(caps_, external));
  ATTENDRE_TRY_ASSIGN(caps_.kernel_style, kernel_style(external.kernels, caps_));
  return finish_setup(limits, ContextOptions{}.fence_timeout_ms);
}

Status Context::create_instance(Validation level) {
  ATTENDRE_TRY(vk::load_global_commands());
  const bool validation = level != Validation::off;
  validation_ = level;
  if (validation && !has_layer(kValidationLayer))
    return {ErrorCode::unsupported, "validation requested but VK_LAYER_KHRONOS_validation is not installed"};
  VkApplicationInfo app{VK_STRUCTURE_TYPE_APPLICATION_INFO};
  app.pApplicationName = "attendre";
  app.pEngineName = "attendre";
  app.apiVersion = VK_API_VERSION_1_1;  // the baseline; newer devices still run 1.1 code
  VkInstanceCreateInfo info{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
  info.pApplicationInfo = &app;
  const char* extensions[] = {VK_EXT_DEBUG_UTILS_EXTENSION_NAME, VK_EXT_VALIDATION_FEATURES_EXTENSION_NAME};
  VkDebugUtilsMessengerCreateInfoEXT messenger_info{VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT};
  messenger_info.messageSeverity =
      VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT;
  messenger_info.messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT |
                               VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                               VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT;
  messenger_info.pfnUserCallback = record_message;
  messenger_info.pUserData = &state_->messages;
  // The validation layer provides VK_EXT_validation_features, which turns
  // on its synchronization and GPU-assisted checks.
  std::vector<VkValidationFeatureEnableEXT> enables;
  if (level == Validation::synchronization || level == Validation::gpu_assisted)
    enables.push_back(VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT);
  if (level == Validation::gpu_assisted) enables.push_back(VK_VALIDATION_FEATURE_ENABLE_GPU_ASSISTED_EXT);
  VkValidationFeaturesEXT features{VK_STRUCTURE_TYPE_VALIDATION_FEATURES_EXT};
  features.enabledValidationFeatureCount = static_cast<uint32_t>(enables.size());
  features.pEnabledValidationFeatures = enables.data();
  if (validation) {
    info.enabledLayerCount = 1;
    info.ppEnabledLayerNames = &kValidationLayer;
    info.enabledExtensionCount = enables.empty() ? 1 : 2;
    info.ppEnabledExtensionNames = extensions;
    messenger_info.pNext = enables.empty() ? nullptr : &features;
    info.pNext = &messenger_info;  // also catches messages from vkCreateInstance itself
  }
  ATTENDRE_TRY(vk::checked(vkCreateInstance(&info, allocator_, &instance_), "vkCreateInstance"));
  ATTENDRE_TRY(vk::load_instance_commands(instance_));
  if (validation) {
    auto create = reinterpret_cast<PFN_vkCreateDebugUtilsMessengerEXT>(
        vkGetInstanceProcAddr(instance_, "vkCreateDebugUtilsMessengerEXT"));
    if (!create) return {ErrorCode::unsupported, "VK_EXT_debug_utils is not available"};
    messenger_info.pNext = nullptr;
    ATTENDRE_TRY(
        vk::checked(create(instance_, &messenger_info, allocator_, &messenger_), "vkCreateDebugUtilsMessengerEXT"));
  }
  return {};
}

Status Context::create_device() {
  const float priority = 1.0f;
  VkDeviceQueueCreateInfo queue_info{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
  queue_info.queueFamilyIndex = queue_family_;
  queue_info.queueCount = 1;
  queue_info.pQueuePriorities = &priority;
  // Optional features are enabled only where present and not switched off
  // (caps_), so that validation catches any other use; kernels check caps_.
  VkPhysicalDevice16BitStorageFeatures storage16{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES};
  storage16.storageBuffer16BitAccess = caps_.storage_16bit ? VK_TRUE : VK_FALSE;
  VkDeviceCreateInfo info{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO};
  info.pNext = &storage16;  // core in 1.1: no extension
  info.queueCreateInfoCount = 1;
  info.pQueueCreateInfos = &queue_info;
  // Each further feature through its extension (the instance asks for 1.1),
  // its struct linked into the chain.
  std::vector<const char*> extensions;
  auto enable = [&](auto& features, const char* extension) {
    features.pNext = storage16.pNext;
    storage16.pNext = &features;
    extensions.push_back(extension);
  };
  VkPhysicalDeviceTimelineSemaphoreFeaturesKHR timeline{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_TIMELINE_SEMAPHORE_FEATURES_KHR};
  timeline.timelineSemaphore = VK_TRUE;
  if (caps_.timeline_semaphore) enable(timeline, VK_KHR_TIMELINE_SEMAPHORE_EXTENSION_NAME);
  // Full subgroups (REQUIRE_FULL_SUBGROUPS pipelines: the shuffle select)
  // need both features; absent or switched off, caps_.max_subgroup_size is 0.
  VkPhysicalDeviceSubgroupSizeControlFeaturesEXT size_control{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_SIZE_CONTROL_FEATURES_EXT};
  size_control.subgroupSizeControl = size_control.computeFullSubgroups = VK_TRUE;
  if (caps_.subgroup_size_control) enable(size_control, VK_EXT_SUBGROUP_SIZE_CONTROL_EXTENSION_NAME);
  // Q8_0 quants as int8 loads (kernels::q8_0_as_int8).
  VkPhysicalDevice8BitStorageFeaturesKHR storage8{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_8BIT_STORAGE_FEATURES_KHR};
  storage8.storageBuffer8BitAccess = VK_TRUE;
  if (caps_.storage_8bit) enable(storage8, VK_KHR_8BIT_STORAGE_EXTENSION_NAME);
  // fp16 products (kernels::half_math): enabled wherever present, the quirk
  // half_math_emulated only picks the builds.
  VkPhysicalDeviceShaderFloat16Int8FeaturesKHR float16{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES_KHR};
  float16.shaderFloat16 = VK_TRUE;
  if (caps_.float16) enable(float16, VK_KHR_SHADER_FLOAT16_INT8_EXTENSION_NAME);
  info.enabledExtensionCount = static_cast<uint32_t>(extensions.size());
  info.ppEnabledExtensionNames = extensions.data();
  ATTENDRE_TRY(vk::checked(vkCreateDevice(physical_device_, &info, allocator_, &device_), "vkCreateDevice"));
  vkGetDeviceQueue(device_, queue_family_, 0, &queue_);
  return {};
}

Status Context::finish_setup(const LimitOverrides& limits, uint32_t fence_timeout_ms) {
  ATTENDRE_REQUIRE(limits.max_groups_per_dispatch.value_or(1) > 0,
                   "LimitOverrides::max_groups_per_dispatch must be at least 1 workgroup");
  apply_limits(caps_, limits);
  caps_.large_workgroups = std::min(caps_.max_invocations, caps_.max_group_size_x) > 128 || caps_.max_shared_bytes > 16384;
  state_->fence_timeout_ns = uint64_t{fence_timeout_ms} * 1000000ull;
  VkCommandPoolCreateInfo pool_info{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
  pool_info.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
  pool_info.queueFamilyIndex = queue_family_;
  ATTENDRE_TRY(
      vk::checked(vkCreateCommandPool(device_, &pool_info, allocator_, &state_->command_pool), "vkCreateCommandPool"));
  // An extension's device command, from the device (the loader's instance
  // trampolines need not know it).
  if (caps_.timeline_semaphore) {
    state_->wait_semaphores = reinterpret_cast<PFN_vkWaitSemaphoresKHR>(vkGetDeviceProcAddr(device_, "vkWaitSemaphoresKHR"));
    if (!state_->wait_semaphores)
      state_->wait_semaphores = reinterpret_cast<PFN_vkWaitSemaphoresKHR>(vkGetDeviceProcAddr(device_, "vkWaitSemaphores"));
  }
  // Labels name each derived barrier's reason in validation messages and captures.
  if (messenger_)
    state_->debug_label = reinterpret_cast<PFN_vkCmdInsertDebugUtilsLabelEXT>(
        vkGetInstanceProcAddr(instance_, "vkCmdInsertDebugUtilsLabelEXT"));
  return {};
}

uint64_t Context::device_memory_bytes() const { return state_->device_memory_bytes; }
uint64_t Context::peak_device_memory_bytes() const { return state_->peak_device_memory_bytes; }
void Context::reset_peak_device_memory() { state_->peak_device_memory_bytes = state_->device_memory_bytes; }

Context::~Context() { release(); }

void Context::StateDeleter::operator()(vk::ContextState* state) const { delete state; }

std::vector<std::string> validation_messages(const Context& context) { return vk::state_of(context).messages; }
void clear_validation_messages(Context& context) { vk::state_of(context).messages.clear(); }

// A queue thread may still touch a finished submission's semaphores and
// command buffers after signalling its fence (lavapipe, Mesa 22.3: its
// queue thread crashed now and then when an adopted device's context was
// destroyed right after its last wait). An empty submission of our own,
// waited on, comes after every earlier one on the queue, so the thread is
// done with them; it waits for nothing the application submits later, and
// idles nothing. On an owned device vkDeviceWaitIdle covers this.
void Context::drain_queue() {
  VkFenceCreateInfo info{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
  VkFence fence = VK_NULL_HANDLE;
  if (vkCreateFence(device_, &info, allocator_, &fence) != VK_SUCCESS) return;  // destroyed anyway
  if (vkQueueSubmit(queue_, 0, nullptr, fence) == VK_SUCCESS)
    vkWaitForFences(device_, 1, &fence, VK_TRUE, state_->fence_timeout_ns);  // a lost device: destroyed anyway
  vkDestroyFence(device_, fence, allocator_);
}

void Context::release() {
  if (!state_) return;  // never set up
  // attendre's objects wait on their own fences when destroyed; an adopted
  // device may run the application's work, which is not ours to wait for.
  if (device_ && owns_device_) vkDeviceWaitIdle(device_);
  if (device_ && !owns_device_) drain_queue();
  for (const vk::ContextState::Timeline& t : state_->spare_timelines) {
    if (!state_->wait_semaphores || t.value == 0) continue;
    VkSemaphoreWaitInfoKHR wait{VK_STRUCTURE_TYPE_SEMAPHORE_WAIT_INFO_KHR};
    wait.semaphoreCount = 1;
    wait.pSemaphores = &t.semaphore;
    wait.pValues = &t.value;
    state_->wait_semaphores(device_, &wait, state_->fence_timeout_ns);  // a lost device: destroyed anyway
  }
  for (VkSemaphore s : state_->timelines) vkDestroySemaphore(device_, s, allocator_);
  state_->timelines.clear();
  state_->spare_timelines.clear();
  if (state_->command_pool) vkDestroyCommandPool(device_, state_->command_pool, allocator_);
  state_->command_pool = VK_NULL_HANDLE;
  state_->pipelines.clear();
  if (owns_device_) {
    if (device_) vkDestroyDevice(device_, allocator_);
    if (messenger_) {
      auto destroy = reinterpret_cast<PFN_vkDestroyDebugUtilsMessengerEXT>(
          vkGetInstanceProcAddr(instance_, "vkDestroyDebugUtilsMessengerEXT"));
      if (destroy) destroy(instance_, messenger_, allocator_);
    }
    if (instance_) vkDestroyInstance(instance_, allocator_);
  }
  device_ = VK_NULL_HANDLE;
  messenger_ = VK_NULL_HANDLE;
  instance_ = VK_NULL_HANDLE;
}

Result<std::vector<std::string>> list_devices() {
  VkApplicationInfo app{VK_STRUCTURE_TYPE_APPLICATION_INFO};
  app.apiVersion = VK_API_VERSION_1_1;
  VkInstanceCreateInfo info{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
  info.pApplicationInfo = &app;
  VkInstance instance = VK_NULL_HANDLE;
  ATTENDRE_TRY(vk::load_global_commands());
  ATTENDRE_TRY(vk::checked(vkCreateInstance(&info, nullptr, &instance), "vkCreateInstance"));
  if (Status loaded = vk::load_instance_commands(instance); !loaded.ok()) {
    vkDestroyInstance(instance, nullptr);
    return loaded;
  }
  uint32_t count = 0;
  vkEnumeratePhysicalDevices(instance, &count, nullptr);
  std::vector<VkPhysicalDevice> devices(count);
  vkEnumeratePhysicalDevices(instance, &count, devices.data());
  std::vector<std::string> lines;
  for (uint32_t i = 0; i < count; ++i) lines.push_back(vk::describe_device(devices[i], i));
  vkDestroyInstance(instance, nullptr);
  return lines;
}

}  // namespace attendre
