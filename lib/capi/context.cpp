// Contexts: a device created with options, or adopted from the application.
#include "capi/capi.hpp"

#include <attendre/diagnostics.hpp>

using namespace attendre;
using namespace attendre::capi;

namespace {

// The C bits are the C++ Feature numbers (attendre.h lists them in order).
static_assert(ATTENDRE_FEATURES_ALL == (1u << kFeatureCount) - 1);
static_assert(ATTENDRE_FEATURE_LARGE_WORKGROUPS == 1u << static_cast<uint32_t>(Feature::large_workgroups));

// A -1/0/1 field: unset (the environment decides), false or true.
Result<std::optional<bool>> preference(int value, const std::string& field) {
  ATTENDRE_REQUIRE(value >= -1 && value <= 1, field + " " + std::to_string(value) + " is not -1, 0 or 1");
  return value < 0 ? std::optional<bool>{} : std::optional<bool>{value == 1};
}

// The options of create, also those of adopt that apply to it (`what`
// names the call in messages).
Result<ContextOptions> context_options(const attendre_context_options& o, const std::string& what) {
  ContextOptions options;
  if (o.device) options.device = o.device;
  ATTENDRE_REQUIRE(o.validation >= -1 && o.validation <= ATTENDRE_VALIDATION_GPU,
                   what + ": validation " + std::to_string(o.validation) + " is not an attendre_validation (-1 to 3)");
  if (o.validation >= 0) options.validation = static_cast<Validation>(o.validation);
  ATTENDRE_REQUIRE(o.portable_limits >= -1 && o.portable_limits <= 1,
                   what + ": portable_limits " + std::to_string(o.portable_limits) + " is not -1, 0 or 1");
  if (o.portable_limits >= 0) options.limits = o.portable_limits ? LimitOverrides::portable() : LimitOverrides{};
  if (o.max_groups_per_dispatch > 0) {
    ATTENDRE_REQUIRE(options.limits.has_value(), what + ": max_groups_per_dispatch needs portable_limits 0 or 1 (-1 "
                                                        "leaves the limits to the environment)");
    options.limits->max_groups_per_dispatch = o.max_groups_per_dispatch;
  }
  ATTENDRE_REQUIRE(o.kernels >= -1 && o.kernels <= ATTENDRE_KERNELS_DIRECT,
                   what + ": kernels " + std::to_string(o.kernels) + " is not an attendre_kernels (-1 to 1)");
  if (o.kernels >= 0)
    options.kernels = o.kernels == ATTENDRE_KERNELS_TILED ? DeviceCaps::KernelStyle::tiled : DeviceCaps::KernelStyle::direct;
  ATTENDRE_TRY_ASSIGN(options.prefer_half_loads, preference(o.half_loads, what + ": half_loads"));
  ATTENDRE_TRY_ASSIGN(options.prefer_byte_loads, preference(o.byte_loads, what + ": byte_loads"));
  ATTENDRE_TRY_ASSIGN(options.prefer_half_math, preference(o.half_math, what + ": half_math"));
  ATTENDRE_REQUIRE(o.fence_timeout_ms > 0, what + ": fence_timeout_ms is 0");
  options.fence_timeout_ms = o.fence_timeout_ms;
  if (o.disabled_features != ATTENDRE_FEATURES_DEFAULT) {
    // An unknown bit is a feature this library does not know: refusing it
    // keeps a newer program from believing a fallback is tested.
    const uint32_t unknown = o.disabled_features & ~ATTENDRE_FEATURES_ALL;
    ATTENDRE_REQUIRE(unknown == 0, what + ": disabled_features has unknown bits " + std::to_string(unknown) +
                                       " (the ATTENDRE_FEATURE_* bits are " + std::to_string(ATTENDRE_FEATURES_ALL) +
                                       ")");
    options.disabled_features = FeatureSet{o.disabled_features};
  }
  options.allocator = static_cast<const VkAllocationCallbacks*>(o.allocator);
  return options;
}

}  // namespace

extern "C" {

void attendre_context_options_defaults(attendre_context_options* options) {
  if (!options) return;
  *options = attendre_context_options{};
  options->validation = ATTENDRE_VALIDATION_DEFAULT;
  options->portable_limits = -1;
  options->kernels = ATTENDRE_KERNELS_DEFAULT;
  options->fence_timeout_ms = ContextOptions{}.fence_timeout_ms;
  options->disabled_features = ATTENDRE_FEATURES_DEFAULT;
  options->half_loads = -1;
  options->byte_loads = -1;
  options->half_math = -1;
}

attendre_status attendre_context_create(const attendre_context_options* options, attendre_context** context) {
  return guard([&]() -> Outcome {
    ATTENDRE_C_NEED(context, "attendre_context_create: context");
    *context = nullptr;
    attendre_context_options o;
    attendre_context_options_defaults(&o);
    ATTENDRE_TRY_ASSIGN(const ContextOptions chosen, context_options(options ? *options : o, "attendre_context_create"));
    ATTENDRE_TRY_ASSIGN(std::unique_ptr<Context> made, Context::create(chosen));
    *context = new attendre_context(std::move(made));
    return ATTENDRE_OK;
  });
}

attendre_status attendre_context_adopt(const attendre_external_device* external, attendre_context** context) {
  return guard([&]() -> Outcome {
    ATTENDRE_C_NEED(context, "attendre_context_adopt: context");
    *context = nullptr;
    ATTENDRE_C_NEED(external, "attendre_context_adopt: external");
    const attendre_external_device& e = *external;
    // Dispatchable Vulkan handles are pointers to opaque structs.
    ExternalDevice device;
    device.instance = static_cast<VkInstance>(e.instance);
    device.physical_device = static_cast<VkPhysicalDevice>(e.physical_device);
    device.device = static_cast<VkDevice>(e.device);
    device.queue = static_cast<VkQueue>(e.queue);
    device.queue_family = e.queue_family;
    device.storage_16bit_enabled = e.storage_16bit_enabled != 0;
    device.timeline_semaphore_enabled = e.timeline_semaphore_enabled != 0;
    device.storage_8bit_enabled = e.storage_8bit_enabled != 0;
    device.float16_enabled = e.float16_enabled != 0;
    device.get_instance_proc_addr = reinterpret_cast<PFN_vkGetInstanceProcAddr>(e.get_instance_proc_addr);
    ATTENDRE_REQUIRE(device.instance && device.physical_device && device.device && device.queue,
                     "attendre_context_adopt: instance, physical_device, device and queue must all be set");
    attendre_context_options defaults;
    attendre_context_options_defaults(&defaults);
    const attendre_context_options& o = e.options ? *e.options : defaults;
    ATTENDRE_TRY_ASSIGN(const ContextOptions options, context_options(o, "attendre_context_adopt"));
    // The application made the instance and device: options that would
    // choose or configure them cannot apply, and are refused, not ignored.
    ATTENDRE_REQUIRE((!o.device || !*o.device) && o.validation == ATTENDRE_VALIDATION_DEFAULT &&
                         o.fence_timeout_ms == defaults.fence_timeout_ms,
                     "attendre_context_adopt: options.device, validation and fence_timeout_ms must keep their defaults");
    device.kernels = options.kernels;
    device.disabled_features = options.disabled_features;
    device.prefer_half_loads = options.prefer_half_loads;
    device.prefer_byte_loads = options.prefer_byte_loads;
    device.prefer_half_math = options.prefer_half_math;
    device.allocator = options.allocator;
    // Unset (-1) reads no environment here: an adopted device's limits are
    // the application's, as before options existed.
    ATTENDRE_TRY_ASSIGN(std::unique_ptr<Context> made, Context::adopt(device, options.limits.value_or(LimitOverrides{})));
    *context = new attendre_context(std::move(made));
    return ATTENDRE_OK;
  });
}

void attendre_context_destroy(attendre_context* context) { delete context; }

attendre_status attendre_context_device_name(const attendre_context* context, char* name, size_t* count) {
  return guard([&]() -> Outcome {
    ATTENDRE_C_NEED(context, "attendre_context_device_name: context");
    return copy_text(context->context.caps().name, name, count, "attendre_context_device_name");
  });
}

attendre_status attendre_context_disabled_features(const attendre_context* context, uint32_t* features) {
  return guard([&]() -> Outcome {
    ATTENDRE_C_NEED(context, "attendre_context_disabled_features: context");
    ATTENDRE_C_NEED(features, "attendre_context_disabled_features: features");
    *features = context->context.caps().disabled.bits;
    return ATTENDRE_OK;
  });
}

attendre_status attendre_context_device_memory(const attendre_context* context, uint64_t* bytes,
                                               uint64_t* peak_bytes) {
  return guard([&]() -> Outcome {
    ATTENDRE_C_NEED(context, "attendre_context_device_memory: context");
    const Context& c = context->context;
    ATTENDRE_C_NEED(bytes, "attendre_context_device_memory: bytes");
    ATTENDRE_C_NEED(peak_bytes, "attendre_context_device_memory: peak_bytes");
    *bytes = c.device_memory_bytes();
    *peak_bytes = c.peak_device_memory_bytes();
    return ATTENDRE_OK;
  });
}

attendre_status attendre_context_take_validation_messages(attendre_context* context, size_t* messages, char* text,
                                                          size_t* count) {
  return guard([&]() -> Outcome {
    ATTENDRE_C_NEED(context, "attendre_context_take_validation_messages: context");
    Context& c = context->context;
    ATTENDRE_C_NEED(messages, "attendre_context_take_validation_messages: messages");
    const std::vector<std::string> found = validation_messages(c);
    std::string joined;
    for (const std::string& m : found) joined += m + "\n";
    *messages = found.size();
    if (count) {
      // Kept for the call with a larger buffer.
      ATTENDRE_C_TRY(copy_text(joined, text, count, "attendre_context_take_validation_messages"));
    }
    clear_validation_messages(c);
    return ATTENDRE_OK;
  });
}

}  // extern "C"
