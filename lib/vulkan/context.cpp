#include "vulkan/api.hpp"
#include "vulkan/check.hpp"
#include "vulkan/context_state.hpp"
#include "vulkan/device_select.hpp"
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

// The watchdog bound by default (DeviceCaps::max_groups_per_dispatch).
// Mobile drivers kill a submission whose dispatch runs for seconds; we aim
// at 50 ms per dispatch on a phone-class GPU. Every grid that grows with a
// size (M, the chunk, the query batch, a matrix's rows) has workgroups of
// bounded work: a score tile (16 rows x 64 slots x head_dim 128: 2^17
// multiply-adds), a select tile or a merge of TILE / keep lists (~2^16
// compare-exchanges), a matmul tile (2048 outputs x the input width: 2^20
// at width 576). 1024 such workgroups are at most ~2^30 multiply-adds, 20 ms
// at the ~50 GFMA/s of a low-end phone GPU (flagships run 10-20x that).
// Discrete GPUs have no such watchdog for compute (or one of seconds) and
// run thousands of workgroups at once: unlimited there. The matmul's share
// per workgroup grows with the input width, so wide matrices on slow GPUs
// need a lower bound (LimitOverrides, ATTENDRE_MAX_GROUPS_PER_DISPATCH).
constexpr uint32_t kDefaultGroupsPerDispatch = 1024;
}  // namespace

uint32_t vk::default_groups_per_dispatch(VkPhysicalDeviceType type) {
  return type == VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU ? 0xFFFFFFFFu : kDefaultGroupsPerDispatch;
}

namespace {

constexpr const char* kValidationLayer = "VK_LAYER_KHRONOS_validation";

// A 0/1 switch; anything else is an error, so a typo never silently
// leaves a switch off.
Result<bool> env_flag(const char* name) {
  const char* value = std::getenv(name);
  if (!value || std::strcmp(value, "0") == 0 || *value == '\0') return false;
  if (std::strcmp(value, "1") == 0) return true;
  return invalid_argument(std::string(name) + " must be 0 or 1, got '" + value + "'");
}

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

std::string env_string(const char* name) {
  const char* value = std::getenv(name);
  return value ? value : "";
}

// A positive 32-bit count, or nothing when unset or empty.
Result<std::optional<uint32_t>> env_count(const char* name) {
  const std::string value = env_string(name);
  if (value.empty()) return std::optional<uint32_t>{};
  char* end = nullptr;
  const unsigned long long n = std::strtoull(value.c_str(), &end, 10);
  if (*end != '\0' || value[0] == '-' || n == 0 || n > 0xFFFFFFFFull)
    return invalid_argument(std::string(name) + " must be a positive 32-bit count, got '" + value + "'");
  return std::optional<uint32_t>{static_cast<uint32_t>(n)};
}


VKAPI_ATTR VkBool32 VKAPI_CALL record_message(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                                              VkDebugUtilsMessageTypeFlagsEXT,
                                              const VkDebugUtilsMessengerCallbackDataEXT* data, void* user) {
  auto* messages = static_cast<std::vector<std::string>*>(user);
  const char* level = severity >= VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT ? "error" : "warning";
  messages->push_back(std::string(level) + ": " + (data->pMessage ? data->pMessage : "(no message)"));
  return VK_FALSE;  // never abort the call that triggered the message
}

constexpr const char* kFeatureNames[kFeatureCount] = {"16bit",   "float16", "8bit",         "arithmetic",
                                                      "ballot",  "shuffle", "size_control", "large_workgroups",
                                                      "timeline"};

// The switches in ATTENDRE_DISABLE; read only when the options leave them unset.
Result<FeatureSet> disabled_features(const std::optional<FeatureSet>& requested) {
  if (requested) return *requested;
  return try_parse_features(env_string("ATTENDRE_DISABLE"));
}

// A preference over a driver quirk: the option (prefer_half_loads,
// prefer_byte_loads, prefer_half_math), else the 0/1 variable `env`, read
// only then.
Result<bool> preference(const std::optional<bool>& requested, const char* env) {
  if (requested) return *requested;
  return env_flag(env);
}

// Treats the switched-off features as absent, before the device is created
// (so a disabled feature is not even enabled there, and validation catches
// any use) and before any kernel is planned.
void disable_features(DeviceCaps& c, FeatureSet off) {
  c.disabled = off;
  if (off.has(Feature::storage_16bit)) c.storage_16bit = false;
  if (off.has(Feature::float16)) c.float16 = false;
  if (off.has(Feature::storage_8bit)) c.storage_8bit = false;
  if (off.has(Feature::subgroup_arithmetic)) c.subgroup_arithmetic = false;
  if (off.has(Feature::subgroup_ballot)) c.subgroup_ballot = false;
  if (off.has(Feature::subgroup_shuffle)) c.subgroup_shuffle = false;
  if (off.has(Feature::subgroup_size_control)) c.subgroup_size_control = false;
  if (off.has(Feature::timeline_semaphore)) c.timeline_semaphore = false;
  if (!c.subgroup_size_control) c.max_subgroup_size = 0;
  if (off.has(Feature::large_workgroups)) {  // the Vulkan minimums
    c.max_invocations = std::min(c.max_invocations, 128u);
    c.max_group_size_x = std::min(c.max_group_size_x, 128u);
    c.max_shared_bytes = std::min(c.max_shared_bytes, 16384u);
  }
}

// The application's (else the environment's) switches, on created and
// adopted devices alike: features off, and the quirks half_loads_lane_by_lane
// and byte_loads_lane_by_lane cleared where 16-bit or 8-bit loads are
// preferred, half_math_emulated where fp16 math is.
template <typename Options>
Status apply_switches(DeviceCaps& c, const Options& o) {
  ATTENDRE_TRY_ASSIGN(const FeatureSet off, disabled_features(o.disabled_features));
  disable_features(c, off);
  ATTENDRE_TRY_ASSIGN(const bool halves, preference(o.prefer_half_loads, "ATTENDRE_HALF_LOADS"));
  if (halves) c.quirks.half_loads_lane_by_lane = false;
  ATTENDRE_TRY_ASSIGN(const bool bytes, preference(o.prefer_byte_loads, "ATTENDRE_BYTE_LOADS"));
  if (bytes) c.quirks.byte_loads_lane_by_lane = false;
  ATTENDRE_TRY_ASSIGN(const bool math, preference(o.prefer_half_math, "ATTENDRE_HALF_MATH"));
  if (math) c.quirks.half_math_emulated = false;
  return {};
}

bool has_device_extension(VkPhysicalDevice physical, const char* name) {
  uint32_t count = 0;
  vkEnumerateDeviceExtensionProperties(physical, nullptr, &count, nullptr);
  std::vector<VkExtensionProperties> extensions(count);
  vkEnumerateDeviceExtensionProperties(physical, nullptr, &count, extensions.data());
  return std::any_of(extensions.begin(), extensions.end(),
                     [&](const VkExtensionProperties& e) { return std::strcmp(e.extensionName, name) == 0; });
}

bool has_layer(const char* name) {
  uint32_t count = 0;
  vkEnumerateInstanceLayerProperties(&count, nullptr);
  std::vector<VkLayerProperties> layers(count);
  vkEnumerateInstanceLayerProperties(&count, layers.data());
  return std::any_of(layers.begin(), layers.end(),
                     [&](const VkLayerProperties& l) { return std::strcmp(l.layerName, name) == 0; });
}

Result<DeviceCaps> query_caps(VkPhysicalDevice physical, uint32_t queue_family) {
  VkPhysicalDeviceSubgroupProperties subgroup{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES};
  VkPhysicalDeviceSubgroupSizeControlPropertiesEXT size_range{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_SIZE_CONTROL_PROPERTIES_EXT};
  VkPhysicalDeviceProperties2 props2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
  props2.pNext = &subgroup;
  const bool has_size_control = has_device_extension(physical, VK_EXT_SUBGROUP_SIZE_CONTROL_EXTENSION_NAME);
  if (has_size_control) subgroup.pNext = &size_range;
  vkGetPhysicalDeviceProperties2(physical, &props2);
  // Driver name and version string: core in Vulkan 1.2, absent before.
  VkPhysicalDeviceDriverProperties driver{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES};
  if (props2.properties.apiVersion >= VK_API_VERSION_1_2) {
    VkPhysicalDeviceProperties2 props_driver{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
    props_driver.pNext = &driver;
    vkGetPhysicalDeviceProperties2(physical, &props_driver);
  }
  const VkPhysicalDeviceProperties& p = props2.properties;
  const VkPhysicalDeviceLimits& l = p.limits;

  VkPhysicalDevice16BitStorageFeatures storage16{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES};
  VkPhysicalDeviceFeatures2 features2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
  features2.pNext = &storage16;
  // The instance asks for Vulkan 1.1, so the newer feature structures are
  // chained only where the device offers their extensions.
  VkPhysicalDeviceShaderFloat16Int8FeaturesKHR float16{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES_KHR};
  VkPhysicalDevice8BitStorageFeaturesKHR storage8{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_8BIT_STORAGE_FEATURES_KHR};
  VkPhysicalDeviceSubgroupSizeControlFeaturesEXT size_control{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_SIZE_CONTROL_FEATURES_EXT};
  VkPhysicalDeviceTimelineSemaphoreFeaturesKHR timeline{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_TIMELINE_SEMAPHORE_FEATURES_KHR};
  auto chain = [&](auto& next) {
    next.pNext = features2.pNext;
    features2.pNext = &next;
  };
  if (has_device_extension(physical, VK_KHR_SHADER_FLOAT16_INT8_EXTENSION_NAME)) chain(float16);
  if (has_device_extension(physical, VK_KHR_8BIT_STORAGE_EXTENSION_NAME)) chain(storage8);
  if (has_size_control) chain(size_control);
  if (has_device_extension(physical, VK_KHR_TIMELINE_SEMAPHORE_EXTENSION_NAME)) chain(timeline);
  vkGetPhysicalDeviceFeatures2(physical, &features2);

  VkPhysicalDeviceMaintenance3Properties maintenance3{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_3_PROPERTIES};
  VkPhysicalDeviceProperties2 props_m3{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
  props_m3.pNext = &maintenance3;
  vkGetPhysicalDeviceProperties2(physical, &props_m3);

  uint32_t family_count = 0;
  vkGetPhysicalDeviceQueueFamilyProperties(physical, &family_count, nullptr);
  std::vector<VkQueueFamilyProperties> families(family_count);
  vkGetPhysicalDeviceQueueFamilyProperties(physical, &family_count, families.data());

  VkPhysicalDeviceMemoryProperties memory;
  vkGetPhysicalDeviceMemoryProperties(physical, &memory);

  DeviceCaps c;
  c.name = p.deviceName;
  c.driver_name = driver.driverName;
  c.driver_info = driver.driverInfo;
  c.vendor_id = p.vendorID;
  c.device_id = p.deviceID;
  c.api_version = p.apiVersion;
  c.driver_version = p.driverVersion;
  c.type = p.deviceType;
  c.max_invocations = l.maxComputeWorkGroupInvocations;
  c.max_group_size_x = l.maxComputeWorkGroupSize[0];
  c.max_group_count_x = l.maxComputeWorkGroupCount[0];
  c.max_group_count_y = l.maxComputeWorkGroupCount[1];
  c.max_groups_per_dispatch = default_groups_per_dispatch(c.type);
  c.max_shared_bytes = l.maxComputeSharedMemorySize;
  c.max_storage_range = l.maxStorageBufferRange;
  // The spec's largest minStorageBufferOffsetAlignment: the layouts place
  // every section at 256 bytes (gpu/layouts.hpp), so a device asking for
  // more does not conform and is refused.
  if (l.minStorageBufferOffsetAlignment > 256)
    return Status{ErrorCode::unsupported, std::string(p.deviceName) + " asks for storage buffer offsets aligned to " +
                                              std::to_string(l.minStorageBufferOffsetAlignment) +
                                              " bytes, past the 256 the Vulkan spec allows"};
  c.storage_alignment = 256;
  c.max_push_constants = l.maxPushConstantsSize;
  c.max_storage_buffers = l.maxPerStageDescriptorStorageBuffers;
  c.max_allocation = maintenance3.maxMemoryAllocationSize;
  c.non_coherent_atom = std::max<uint64_t>(1, l.nonCoherentAtomSize);
  for (uint32_t i = 0; i < memory.memoryHeapCount; ++i)
    if (memory.memoryHeaps[i].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT)
      c.device_local_bytes = std::max<uint64_t>(c.device_local_bytes, memory.memoryHeaps[i].size);
  const VkMemoryPropertyFlags unified = VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT | VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT;
  for (uint32_t i = 0; i < memory.memoryTypeCount; ++i)
    if ((memory.memoryTypes[i].propertyFlags & unified) == unified) c.unified_memory = true;
  c.subgroup_size = subgroup.subgroupSize;
  c.subgroup_shuffle = (subgroup.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT) != 0 &&
                       (subgroup.supportedOperations & VK_SUBGROUP_FEATURE_SHUFFLE_BIT) != 0;
  const bool compute_subgroups = (subgroup.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT) != 0;
  c.subgroup_arithmetic = compute_subgroups && (subgroup.supportedOperations & VK_SUBGROUP_FEATURE_ARITHMETIC_BIT) != 0;
  c.subgroup_ballot = compute_subgroups && (subgroup.supportedOperations & VK_SUBGROUP_FEATURE_BALLOT_BIT) != 0;
  c.subgroup_size_control = size_control.subgroupSizeControl == VK_TRUE && size_control.computeFullSubgroups == VK_TRUE &&
                            size_range.maxSubgroupSize > 0;
  c.max_subgroup_size = c.subgroup_size_control ? size_range.maxSubgroupSize : 0;
  c.storage_16bit = storage16.storageBuffer16BitAccess == VK_TRUE;
  c.float16 = float16.shaderFloat16 == VK_TRUE;
  c.storage_8bit = storage8.storageBuffer8BitAccess == VK_TRUE;
  c.timeline_semaphore = timeline.timelineSemaphore == VK_TRUE;
  c.timestamp_valid_bits = families[queue_family].timestampValidBits;
  c.timestamps = c.timestamp_valid_bits > 0 && l.timestampPeriod > 0.0f;
  c.timestamp_period_ns = static_cast<double>(l.timestampPeriod);
  // Every driver quirk is decided here, and applied here or in kernel_style().
  const bool lavapipe = c.type == VK_PHYSICAL_DEVICE_TYPE_CPU && c.name.rfind("llvmpipe", 0) == 0;
  c.quirks.barriers_switch_context = c.type == VK_PHYSICAL_DEVICE_TYPE_CPU;
  c.quirks.loops_stop_at_65535 = lavapipe;
  if (c.quirks.loops_stop_at_65535) c.max_loop_iterations = 65535;
  c.quirks.half_loads_lane_by_lane = lavapipe;
  c.quirks.byte_loads_lane_by_lane = lavapipe;
  c.quirks.half_math_emulated = lavapipe;
  return c;
}

Result<DeviceCaps::KernelStyle> kernel_style(std::optional<DeviceCaps::KernelStyle> requested, const DeviceCaps& caps) {
  if (requested) return *requested;
  const std::string env = env_string("ATTENDRE_KERNELS");
  if (env == "tiled") return DeviceCaps::KernelStyle::tiled;
  if (env == "direct") return DeviceCaps::KernelStyle::direct;
  if (!env.empty()) return invalid_argument("ATTENDRE_KERNELS must be tiled or direct, got '" + env + "'");
  return caps.quirks.barriers_switch_context ? DeviceCaps::KernelStyle::direct : DeviceCaps::KernelStyle::tiled;
}

void apply_limits(DeviceCaps& caps, const LimitOverrides& limits) {
  if (limits.max_invocations) {
    caps.max_invocations = std::min(caps.max_invocations, *limits.max_invocations);
    caps.max_group_size_x = std::min(caps.max_group_size_x, *limits.max_invocations);
  }
  if (limits.max_shared_bytes) caps.max_shared_bytes = std::min(caps.max_shared_bytes, *limits.max_shared_bytes);
  if (limits.max_storage_range) caps.max_storage_range = std::min(caps.max_storage_range, *limits.max_storage_range);
  if (limits.max_groups_per_dispatch) caps.max_groups_per_dispatch = *limits.max_groups_per_dispatch;
  caps.non_coherent_host = caps.non_coherent_host || limits.non_coherent_host;
  caps.unified_memory = caps.unified_memory && !limits.discrete_memory;
}

}  // namespace

const char* feature_name(Feature feature) { return kFeatureNames[static_cast<uint32_t>(feature)]; }

Result<FeatureSet> try_parse_features(const std::string& list) {
  FeatureSet set;
  if (list.empty()) return set;
  for (size_t start = 0;;) {
    const size_t end = std::min(list.find(',', start), list.size());
    const std::string name = list.substr(start, end - start);
    const auto* found = std::find(std::begin(kFeatureNames), std::end(kFeatureNames), name);
    if (found == std::end(kFeatureNames)) {
      std::string valid;
      for (const char* n : kFeatureNames) valid += (valid.empty() ? "" : ", ") + std::string(n);
      return invalid_argument("unknown device feature '" + name + "' (valid: " + valid + ")");
    }
    set.add(static_cast<Feature>(found - std::begin(kFeatureNames)));
    if (end == list.size()) return set;
    start = end + 1;
  }
}

std::vector<std::string> DriverQuirks::describe() const {
  std::vector<std::string> lines;
  if (barriers_switch_context)
    lines.emplace_back("barriers_switch_context: a CPU device runs a workgroup as coroutines, a barrier costs a "
                       "context switch per SIMD group -> direct kernels");
  if (loops_stop_at_65535)
    lines.emplace_back("loops_stop_at_65535: lavapipe leaves any loop after 65535 iterations per invocation -> "
                       "retrieval batches bounded");
  if (half_loads_lane_by_lane)
    lines.emplace_back("half_loads_lane_by_lane: lavapipe gathers 16-bit loads lane by lane, slower than 32-bit words "
                       "-> fp16 weights, memories and activations read as unpacked words");
  if (byte_loads_lane_by_lane)
    lines.emplace_back("byte_loads_lane_by_lane: lavapipe gathers 8-bit loads lane by lane, slower than 32-bit words "
                       "(Q8_0 64 x 1536 x 576: direct 7.1 against 5.6 ms, tiled 43 against 40 ms) -> Q8_0 quants "
                       "unpacked from words");
  if (half_math_emulated)
    lines.emplace_back("half_math_emulated: lavapipe converts each fp16 operation through fp32, fp16 products "
                       "measured slower than fp32 math (64 x 1536 x 576: direct 36 against 28 ms, tiled 59 against 44 ms) "
                       "-> fp16 activations x fp16 weights multiplied in fp32");
  return lines;
}

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
  caps_.storage_16bit = caps_.storage_16bit && external.storage_16bit_enabled;
  caps_.timeline_semaphore = caps_.timeline_semaphore && external.timeline_semaphore_enabled;
  caps_.storage_8bit = caps_.storage_8bit && external.storage_8bit_enabled;
  caps_.float16 = caps_.float16 && external.float16_enabled;
  // The features that need enabling at device creation are used only where
  // the application says it enabled them; subgroup size control has no such
  // flag (its pipelines also need computeFullSubgroups) and counts as absent.
  caps_.subgroup_size_control = false;
  caps_.max_subgroup_size = 0;
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

std::vector<std::string> validation_messages(const Context& context) { return context.state().messages; }
void clear_validation_messages(Context& context) { context.state().messages.clear(); }

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

Result<std::vector<std::string>> try_list_devices() {
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
