#include "vulkan/device_caps.hpp"

#include "vulkan/api.hpp"
#include "vulkan/context_state.hpp"
#include "vulkan/environment.hpp"
#include "core/try.hpp"

#include <attendre/error.hpp>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

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

constexpr const char* kFeatureNames[kFeatureCount] = {"16bit",   "float16", "8bit",         "arithmetic",
                                                      "ballot",  "shuffle", "size_control", "large_workgroups",
                                                      "timeline", "texel"};

// The switches in ATTENDRE_DISABLE; read only when the options leave them unset.
Result<FeatureSet> disabled_features(const std::optional<FeatureSet>& requested) {
  if (requested) return *requested;
  return parse_features(env_string("ATTENDRE_DISABLE"));
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
  if (off.has(Feature::texel_buffers)) c.texel_buffers = false;
  if (!c.subgroup_size_control) c.max_subgroup_size = 0;
  if (off.has(Feature::large_workgroups)) {  // the Vulkan minimums
    c.max_invocations = std::min(c.max_invocations, 128u);
    c.max_group_size_x = std::min(c.max_group_size_x, 128u);
    c.max_shared_bytes = std::min(c.max_shared_bytes, 16384u);
  }
}

// apply_switches for either kind of options: features off, and the quirks
// half_loads_lane_by_lane and byte_loads_lane_by_lane cleared where 16-bit
// or 8-bit loads are preferred, half_math_emulated where fp16 math is.
template <typename Options>
Status switches(DeviceCaps& c, const Options& o) {
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

}  // namespace

uint32_t vk::default_groups_per_dispatch(VkPhysicalDeviceType type) {
  return type == VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU ? 0xFFFFFFFFu : kDefaultGroupsPerDispatch;
}

bool vk::has_device_extension(VkPhysicalDevice physical, const char* name) {
  uint32_t count = 0;
  vkEnumerateDeviceExtensionProperties(physical, nullptr, &count, nullptr);
  std::vector<VkExtensionProperties> extensions(count);
  vkEnumerateDeviceExtensionProperties(physical, nullptr, &count, extensions.data());
  return std::any_of(extensions.begin(), extensions.end(),
                     [&](const VkExtensionProperties& e) { return std::strcmp(e.extensionName, name) == 0; });
}

Result<DeviceCaps> vk::query_caps(VkPhysicalDevice physical, uint32_t queue_family) {
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
  c.texel_buffers = true;
  for (VkFormat format : {VK_FORMAT_R32G32B32A32_SFLOAT, VK_FORMAT_R16G16B16A16_SFLOAT, VK_FORMAT_R32G32_UINT,
                          VK_FORMAT_R32_UINT}) {
    VkFormatProperties properties{};
    vkGetPhysicalDeviceFormatProperties(physical, format, &properties);
    c.texel_buffers = c.texel_buffers && (properties.bufferFeatures & VK_FORMAT_FEATURE_UNIFORM_TEXEL_BUFFER_BIT) != 0;
  }
  c.max_texel_elements = l.maxTexelBufferElements;
  c.texel_alignment = std::max<uint64_t>(1, l.minTexelBufferOffsetAlignment);
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

Result<DeviceCaps::KernelStyle> vk::kernel_style(std::optional<DeviceCaps::KernelStyle> requested, const DeviceCaps& caps) {
  if (requested) return *requested;
  const std::string env = env_string("ATTENDRE_KERNELS");
  if (env == "tiled") return DeviceCaps::KernelStyle::tiled;
  if (env == "direct") return DeviceCaps::KernelStyle::direct;
  if (!env.empty()) return invalid_argument("ATTENDRE_KERNELS must be tiled or direct, got '" + env + "'");
  return caps.quirks.barriers_switch_context ? DeviceCaps::KernelStyle::direct : DeviceCaps::KernelStyle::tiled;
}

void vk::apply_limits(DeviceCaps& caps, const LimitOverrides& limits) {
  if (limits.max_invocations) {
    caps.max_invocations = std::min(caps.max_invocations, *limits.max_invocations);
    caps.max_group_size_x = std::min(caps.max_group_size_x, *limits.max_invocations);
  }
  if (limits.max_shared_bytes) caps.max_shared_bytes = std::min(caps.max_shared_bytes, *limits.max_shared_bytes);
  if (limits.max_storage_range) caps.max_storage_range = std::min(caps.max_storage_range, *limits.max_storage_range);
  if (limits.max_groups_per_dispatch) caps.max_groups_per_dispatch = *limits.max_groups_per_dispatch;
  if (limits.max_storage_buffers) caps.max_storage_buffers = std::min(caps.max_storage_buffers, *limits.max_storage_buffers);
  caps.non_coherent_host = caps.non_coherent_host || limits.non_coherent_host;
  caps.unified_memory = caps.unified_memory && !limits.discrete_memory;
}

void vk::keep_enabled(DeviceCaps& caps, const ExternalDevice& external) {
  caps.storage_16bit = caps.storage_16bit && external.storage_16bit_enabled;
  caps.timeline_semaphore = caps.timeline_semaphore && external.timeline_semaphore_enabled;
  caps.storage_8bit = caps.storage_8bit && external.storage_8bit_enabled;
  caps.float16 = caps.float16 && external.float16_enabled;
  // Subgroup size control has no such flag (its pipelines also need
  // computeFullSubgroups) and counts as absent.
  caps.subgroup_size_control = false;
  caps.max_subgroup_size = 0;
}

Status vk::apply_switches(DeviceCaps& caps, const ContextOptions& options) { return switches(caps, options); }
Status vk::apply_switches(DeviceCaps& caps, const ExternalDevice& external) { return switches(caps, external); }

const char* feature_name(Feature feature) { return kFeatureNames[static_cast<uint32_t>(feature)]; }

Result<FeatureSet> parse_features(const std::string& list) {
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

}  // namespace attendre
