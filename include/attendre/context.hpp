// A Vulkan device ready for attendre's compute work: instance, selected
// physical device, logical device, one compute queue, and the device's
// capabilities queried once. Either created here or adopted from an app.
#pragma once

#include <vulkan/vulkan.h>

#include <attendre/status.hpp>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace attendre {

// Optional device features attendre uses when present. Each one has a
// fallback, and each can be switched off (ContextOptions::disabled_features,
// ATTENDRE_DISABLE) so that its fallback runs, and is tested, on any device.
enum class Feature : uint32_t {
  storage_16bit,          // "16bit": fp16 weights, memories, activations as 16-bit loads (else unpackHalf2x16 of words)
  float16,                // "float16": fp16 activations x fp16 weights multiplied in fp16, summed in fp32 (else fp32 math)
  storage_8bit,           // "8bit": Q8_0 quants read as int8 loads (else unpacked from 32-bit words)
  subgroup_arithmetic,    // "arithmetic": score_stats and insert_plan reduce and scan with subgroup operations (else shared-memory trees)
  subgroup_ballot,        // "ballot": insert_plan's prefix sums by bit-sliced ballots where arithmetic is not available
  subgroup_shuffle,       // "shuffle": direct matmuls share block decodes, tiled selects sort within subgroups
  subgroup_size_control,  // "size_control": VK_EXT_subgroup_size_control: full subgroups for the shuffle select
  large_workgroups,       // "large_workgroups": past 128 invocations and 16 KiB of shared memory
  timeline_semaphore,     // "timeline": tickets carry a timeline semaphore to chain on (else fences, host waits only)
  texel_buffers,          // "texel": direct matmuls read weights through uniform texel buffers (else storage-buffer loads)
};
inline constexpr uint32_t kFeatureCount = 10;

// A set of Features (a bitmask).
struct FeatureSet {
  uint32_t bits = 0;
  bool has(Feature f) const { return (bits >> static_cast<uint32_t>(f)) & 1u; }
  FeatureSet& add(Feature f) {
    bits |= 1u << static_cast<uint32_t>(f);
    return *this;
  }
  bool operator==(const FeatureSet&) const = default;
};

// The switch name of a feature ("16bit", "shuffle", ...).
const char* feature_name(Feature feature);
// A comma-separated list of switch names ("shuffle,16bit"; empty: none);
// an unknown name is an error (invalid_argument) listing the valid ones.
Result<FeatureSet> parse_features(const std::string& list);

// Known driver bugs and costs, each a named flag with its reason (after
// ncnn's), decided in one place (lib/vulkan/device_caps.cpp) from the device's
// identity, and applied there to the caps and defaults they change.
struct DriverQuirks {
  // A workgroup's invocations run as coroutines on one CPU core (lavapipe,
  // SwiftShader): every barrier costs a context switch per SIMD group, so the
  // barrier-free `direct` kernels are the default.
  bool barriers_switch_context = false;
  // lavapipe's shader compiler silently leaves any loop after 65535
  // iterations per invocation (DeviceCaps::max_loop_iterations).
  bool loops_stop_at_65535 = false;
  // lavapipe gathers 16-bit loads lane by lane: fp16 weights, memories and
  // activations read faster as 32-bit words unpacked by unpackHalf2x16
  // (README "fp16 activations"), so they are read so even with 16-bit
  // storage present. ContextOptions::prefer_half_loads clears it.
  bool half_loads_lane_by_lane = false;
  // lavapipe gathers 8-bit loads lane by lane too: Q8_0 quants read faster
  // from 32-bit words (README "Platforms"), so they are read so even with
  // 8-bit storage present. ContextOptions::prefer_byte_loads clears it.
  bool byte_loads_lane_by_lane = false;
  // lavapipe (LLVM on x86) emulates fp16 arithmetic through fp32, each
  // operation converted there and back: the fp16 products (shaderFloat16)
  // run slower than fp32 math (README "Kernels and their limits"), so they
  // are not used. ContextOptions::prefer_half_math clears it.
  bool half_math_emulated = false;
  // "name: reason" for each flag set.
  std::vector<std::string> describe() const;
};

// Device limits and optional features, queried once. Every tile and
// workgroup size is derived from these in one function (gpu/kernel_plan).
struct DeviceCaps {
  std::string name;
  std::string driver_name;
  std::string driver_info;
  uint32_t vendor_id = 0;
  uint32_t device_id = 0;
  uint32_t api_version = 0;
  uint32_t driver_version = 0;
  VkPhysicalDeviceType type = VK_PHYSICAL_DEVICE_TYPE_OTHER;

  uint32_t max_invocations = 128;          // maxComputeWorkGroupInvocations
  uint32_t max_group_size_x = 128;         // maxComputeWorkGroupSize[0]
  uint32_t max_group_count_x = 65535;      // maxComputeWorkGroupCount[0]
  uint32_t max_group_count_y = 65535;
  // Watchdog bound: a dispatch of more workgroups is recorded as several
  // (vkCmdDispatchBase) of at most this many each, so that no single
  // dispatch runs long enough for a mobile driver to kill the submission.
  // The default comes from the device type (unlimited, 0xFFFFFFFF, on
  // discrete GPUs; 1024 elsewhere: see default_groups_per_dispatch in
  // lib/vulkan/device_caps.cpp for why), LimitOverrides replace it.
  uint32_t max_groups_per_dispatch = 0xFFFFFFFFu;
  uint32_t max_shared_bytes = 16384;       // maxComputeSharedMemorySize
  uint64_t max_storage_range = 1u << 27;   // maxStorageBufferRange
  uint64_t storage_alignment = 256;        // where sections start: the spec's largest minStorageBufferOffsetAlignment
  uint32_t max_push_constants = 128;
  uint32_t max_storage_buffers = 4;        // maxPerStageDescriptorStorageBuffers
  uint64_t max_allocation = 1ull << 30;    // maxMemoryAllocationSize
  uint64_t device_local_bytes = 0;         // largest DEVICE_LOCAL heap
  uint64_t non_coherent_atom = 256;        // nonCoherentAtomSize
  // Host-visible memory is handled as non-coherent: flushed after host
  // writes, invalidated before host reads. Forced (LimitOverrides) on
  // coherent devices, where mapped memory is then emulated through a host
  // copy that only those calls synchronize, so a missing one shows.
  bool non_coherent_host = false;
  // Device-local memory is host-visible (unified memory: phones, integrated
  // GPUs, CPU devices): weights are written in place, without staging.
  bool unified_memory = false;

  uint32_t subgroup_size = 0;              // no kernel assumes a size (KernelPlan::direct_share reads it)
  // maxSubgroupSize of VK_EXT_subgroup_size_control (0 without it): a
  // pipeline that requires full subgroups needs workgroups of a multiple of it.
  uint32_t max_subgroup_size = 0;
  bool subgroup_shuffle = false;           // subgroupShuffle in compute shaders

  // Kernel family: `tiled` kernels share tiles through shared memory and
  // barriers, which suits GPUs; `direct` kernels (one invocation per output
  // or row, vector loads, no barriers in loops) suit CPU devices such as
  // lavapipe, which runs a workgroup's invocations as coroutines on one core
  // and pays a context switch per SIMD group at every barrier.
  enum class KernelStyle { tiled, direct };
  KernelStyle kernel_style = KernelStyle::tiled;

  // Iterations a loop may run per invocation before the driver leaves it
  // (DriverQuirks::loops_stop_at_65535); kernels whose loops grow with a
  // size stay under it. 0: no such limit.
  uint32_t max_loop_iterations = 0;
  bool storage_16bit = false;              // storageBuffer16BitAccess
  bool float16 = false;                    // shaderFloat16
  bool storage_8bit = false;               // storageBuffer8BitAccess
  bool subgroup_arithmetic = false;        // subgroup operations in compute shaders
  bool subgroup_ballot = false;
  bool subgroup_size_control = false;      // VK_EXT_subgroup_size_control (or Vulkan 1.3)
  bool large_workgroups = false;           // more than 128 invocations or 16 KiB of shared memory
  bool timeline_semaphore = false;         // VK_KHR_timeline_semaphore's timelineSemaphore, enabled
  // Uniform texel buffers of the weight formats (R32G32B32A32_SFLOAT,
  // R16G16B16A16_SFLOAT, R32G32_UINT, R32_UINT: all mandatory in Vulkan
  // 1.1, checked anyway), up to max_texel_elements elements per view at
  // offsets aligned to texel_alignment bytes. The direct matmuls read their
  // weights so (kernels::texel_weights): lavapipe fetches texels with
  // vector gathers, where every storage-buffer load is a loop over lanes.
  bool texel_buffers = false;
  uint32_t max_texel_elements = 65536;     // maxTexelBufferElements
  uint64_t texel_alignment = 256;          // minTexelBufferOffsetAlignment
  FeatureSet disabled;                     // switched off (ContextOptions::disabled_features), masked above
  DriverQuirks quirks;
  bool timestamps = false;
  double timestamp_period_ns = 1.0;        // a double: some devices report fractions
  uint32_t timestamp_valid_bits = 0;
};

// Clamps applied on top of the device's own limits, so that the small
// limits of phones (and the multi-tile paths they need) run anywhere.
struct LimitOverrides {
  std::optional<uint32_t> max_invocations;
  std::optional<uint32_t> max_shared_bytes;
  std::optional<uint64_t> max_storage_range;
  bool non_coherent_host = false;  // treat host-visible memory as non-coherent (emulated if coherent)
  bool discrete_memory = false;    // treat device-local memory as not host-visible (weights staged)
  // Workgroups per dispatch (DeviceCaps::max_groups_per_dispatch), at least 1.
  std::optional<uint32_t> max_groups_per_dispatch;
  // Storage buffers per shader stage (DeviceCaps::max_storage_buffers).
  std::optional<uint32_t> max_storage_buffers;

  // The Vulkan minimums every conformant device guarantees: 128
  // invocations, 16 KiB shared memory, 128 MiB storage ranges, host memory
  // that is not coherent (as on many phones) and no unified memory; and
  // dispatches of at most 32 workgroups, so that the suite's rerun under
  // these limits cuts most grids into pieces; 4 storage buffers per stage
  // (no split products: kernels::splits_outputs).
  static LimitOverrides portable() { return {128u, 16384u, uint64_t{1} << 27, true, true, 32u, 4u}; }
};

// How much the Khronos validation layer checks. Every level records its
// messages (Context::validation_messages()).
enum class Validation {
  off,
  core,             // API usage
  synchronization,  // core + synchronization validation (hazards between commands)
  gpu_assisted,     // synchronization + GPU-assisted checks of shader accesses (slow)
};

struct ContextOptions {
  // Device index or case-insensitive name substring; empty reads
  // ATTENDRE_DEVICE, and failing that prefers discrete, integrated, virtual,
  // then CPU devices.
  std::string device;
  // Unset reads ATTENDRE_VALIDATION: 0 (off), 1 (synchronization), core,
  // gpu (gpu_assisted); any other value is an error.
  std::optional<Validation> validation;
  // Unset reads ATTENDRE_PORTABLE_LIMITS (=1 applies LimitOverrides::portable())
  // and ATTENDRE_MAX_GROUPS_PER_DISPATCH (a positive count, which wins over
  // the portable one).
  std::optional<LimitOverrides> limits;
  // Unset reads ATTENDRE_KERNELS (tiled or direct); else direct on CPU
  // devices, tiled elsewhere. Forcing one tests it on any device.
  std::optional<DeviceCaps::KernelStyle> kernels;
  // Features treated as absent (their fallbacks run). Unset reads
  // ATTENDRE_DISABLE (parse_features: "shuffle,16bit").
  std::optional<FeatureSet> disabled_features;
  // true: 16-bit loads of fp16 data wherever storageBuffer16BitAccess is
  // present, over the quirk half_loads_lane_by_lane (the tests run
  // lavapipe's 16-bit builds so); false: the quirk decides. Unset reads
  // ATTENDRE_HALF_LOADS (0 or 1). For words everywhere, switch
  // Feature::storage_16bit off.
  std::optional<bool> prefer_half_loads;
  // The same for Q8_0 quants: true reads them by int8 loads wherever
  // storageBuffer8BitAccess is present, over the quirk byte_loads_lane_by_lane;
  // false: the quirk decides. Unset reads ATTENDRE_BYTE_LOADS (0 or 1). For
  // words everywhere, switch Feature::storage_8bit off.
  std::optional<bool> prefer_byte_loads;
  // true: fp16 products (fp32 sums) for fp16 activations x fp16 weights
  // wherever shaderFloat16 and 16-bit loads are in use, over the quirk
  // half_math_emulated (the tests run lavapipe's fp16-math builds so);
  // false: the quirk decides. Unset reads ATTENDRE_HALF_MATH (0 or 1). For
  // fp32 math everywhere, switch Feature::float16 off.
  std::optional<bool> prefer_half_math;
  // How long a wait for the device may take before the device is reported
  // as lost (ErrorCode::device_lost): a hung device must not hang the app.
  uint32_t fence_timeout_ms = 60000;
  // The application's host allocator, passed to every Vulkan object attendre
  // creates and destroys (instance and device included); null: the driver's.
  // It must outlive the Context.
  const VkAllocationCallbacks* allocator = nullptr;
};

// Handles of a device an application already created; attendre never
// destroys them. The queue must support compute.
struct ExternalDevice {
  VkInstance instance = VK_NULL_HANDLE;
  VkPhysicalDevice physical_device = VK_NULL_HANDLE;
  VkDevice device = VK_NULL_HANDLE;
  VkQueue queue = VK_NULL_HANDLE;
  uint32_t queue_family = 0;
  bool storage_16bit_enabled = false;
  // The device was created with timelineSemaphore (Vulkan 1.2 core or
  // VK_KHR_timeline_semaphore): tickets then carry a timeline semaphore.
  bool timeline_semaphore_enabled = false;
  // The application's loader entry point; null: attendre opens libvulkan itself.
  PFN_vkGetInstanceProcAddr get_instance_proc_addr = nullptr;
  // As in ContextOptions: unset reads ATTENDRE_KERNELS and ATTENDRE_DISABLE,
  // so an application that sets them reads no environment.
  std::optional<DeviceCaps::KernelStyle> kernels;
  std::optional<FeatureSet> disabled_features;
  std::optional<bool> prefer_half_loads;  // as ContextOptions::prefer_half_loads
  std::optional<bool> prefer_byte_loads;  // as ContextOptions::prefer_byte_loads
  std::optional<bool> prefer_half_math;   // as ContextOptions::prefer_half_math
  // The application's host allocator for the objects attendre creates on
  // this device (never the adopted ones); null: the driver's. It must
  // outlive the Context.
  const VkAllocationCallbacks* allocator = nullptr;
  // The device was created with storageBuffer8BitAccess (Vulkan 1.2 core or
  // VK_KHR_8bit_storage): Q8_0 quants are then read by int8 loads; and with
  // shaderFloat16 (Vulkan 1.2 core or VK_KHR_shader_float16_int8): fp16
  // activations x fp16 weights are then multiplied in fp16 (the driver
  // quirks and preferences above still apply). Features the application did
  // not enable are treated as absent: attendre uses nothing it was not given.
  bool storage_8bit_enabled = false;
  bool float16_enabled = false;
};

namespace vk {
struct ContextState;
struct ContextAccess;  // the library's way to a Context's state (lib/vulkan/context_state.hpp)
}

// Owns (or borrows) the device-level objects. Not copyable or movable:
// buffers and pipelines refer to it, so it must outlive them. One thread
// at a time.
class Context {
 public:
  // A device of its own; fails with (unsupported: no device matches or validation is
  // missing; invalid_argument: a bad option or environment variable).
  // Nothing is leaked on failure.
  static Result<std::unique_ptr<Context>> create(const ContextOptions& options = {});
  // An application's device (ExternalDevice), as the adopting constructor.
  static Result<std::unique_ptr<Context>> adopt(const ExternalDevice& external, const LimitOverrides& limits = {});
  ~Context();
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  VkInstance instance() const { return instance_; }
  VkPhysicalDevice physical_device() const { return physical_device_; }
  VkDevice device() const { return device_; }
  VkQueue queue() const { return queue_; }
  uint32_t queue_family() const { return queue_family_; }
  const DeviceCaps& caps() const { return caps_; }
  // The application's host allocator (ContextOptions/ExternalDevice), given
  // to every vkCreate*, vkDestroy*, vkAllocateMemory and vkFreeMemory call.
  const VkAllocationCallbacks* allocator() const { return allocator_; }

  bool validation_enabled() const { return messenger_ != VK_NULL_HANDLE; }
  Validation validation() const { return validation_; }

  // Bytes of device memory attendre's objects on this context hold now, and
  // the most they have held since the context was created or the last
  // reset_peak_device_memory() (staging freed after a weight load included).
  uint64_t device_memory_bytes() const;
  uint64_t peak_device_memory_bytes() const;
  void reset_peak_device_memory();

 private:
  friend struct vk::ContextAccess;
  struct Unset {};
  explicit Context(Unset) {}  // for create() and adopt(), which initialize it
  // Sets the context up; on failure releases what was created.
  Status initialize(const ContextOptions& options);
  Status initialize(const ExternalDevice& external, const LimitOverrides& limits);
  Status set_up(const ContextOptions& options);
  Status set_up(const ExternalDevice& external, const LimitOverrides& limits);
  Status create_instance(Validation validation);
  Status create_device();
  Status finish_setup(const LimitOverrides& limits, uint32_t fence_timeout_ms);
  // Waits, on a fence of its own, until the queue ran every earlier submission.
  void drain_queue();
  void release();

  bool owns_device_ = true;
  VkInstance instance_ = VK_NULL_HANDLE;
  VkDebugUtilsMessengerEXT messenger_ = VK_NULL_HANDLE;
  VkPhysicalDevice physical_device_ = VK_NULL_HANDLE;
  VkDevice device_ = VK_NULL_HANDLE;
  VkQueue queue_ = VK_NULL_HANDLE;
  uint32_t queue_family_ = 0;
  Validation validation_ = Validation::off;
  const VkAllocationCallbacks* allocator_ = nullptr;
  DeviceCaps caps_;
  // attendre's own state on this context (pipelines, command pool, ...),
  // reached only by the library (vk::state_of). Deleted out of line, so
  // that the inline constructors above need not see it.
  struct StateDeleter {
    void operator()(vk::ContextState* state) const;
  };
  std::unique_ptr<vk::ContextState, StateDeleter> state_;
};

// GPU time of one dispatch, measured with timestamps (profiling on).
struct KernelTime {
  std::string kernel;  // shader name
  double ns = 0.0;
  // Dispatches it was cut into (DeviceCaps::max_groups_per_dispatch), and
  // the longest one's time: the time a driver's watchdog sees.
  uint32_t pieces = 1;
  double longest_piece_ns = 0.0;
};

// One line per physical device: index, name, type, API version.
Result<std::vector<std::string>> list_devices();

}  // namespace attendre
