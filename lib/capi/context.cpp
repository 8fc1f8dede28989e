// Contexts: a device created with options, or adopted from the application.
#include "capi/capi.hpp"

#include <attendre/diagnostics.hpp>

using namespace attendre;
using namespace attendre::capi;

namespace {

ContextOptions context_options(const attendre_context_options& o) {
  ContextOptions options;
  if (o.device) options.device = o.device;
  if (o.validation < -1 || o.validation > ATTENDRE_VALIDATION_GPU)
    fail(ErrorCode::invalid_argument, "attendre_context_create: validation " + std::to_string(o.validation) +
                                          " is not an attendre_validation (-1 to 3)");
  if (o.validation >= 0) options.validation = static_cast<Validation>(o.validation);
  if (o.portable_limits < -1 || o.portable_limits > 1)
    fail(ErrorCode::invalid_argument,
         "attendre_context_create: portable_limits " + std::to_string(o.portable_limits) + " is not -1, 0 or 1");
  if (o.portable_limits >= 0) options.limits = o.portable_limits ? LimitOverrides::portable() : LimitOverrides{};
  if (o.kernels < -1 || o.kernels > ATTENDRE_KERNELS_DIRECT)
    fail(ErrorCode::invalid_argument,
         "attendre_context_create: kernels " + std::to_string(o.kernels) + " is not an attendre_kernels (-1 to 1)");
  if (o.kernels >= 0)
    options.kernels = o.kernels == ATTENDRE_KERNELS_TILED ? DeviceCaps::KernelStyle::tiled : DeviceCaps::KernelStyle::direct;
  require(o.fence_timeout_ms > 0, "attendre_context_create: fence_timeout_ms is 0");
  options.fence_timeout_ms = o.fence_timeout_ms;
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
}

attendre_status attendre_context_create(const attendre_context_options* options, attendre_context** context) {
  return guard([&] {
    need(context, "attendre_context_create: context");
    *context = nullptr;
    attendre_context_options o;
    attendre_context_options_defaults(&o);
    *context = new attendre_context(context_options(options ? *options : o));
    return ATTENDRE_OK;
  });
}

attendre_status attendre_context_adopt(const attendre_external_device* external, attendre_context** context) {
  return guard([&] {
    need(context, "attendre_context_adopt: context");
    *context = nullptr;
    const attendre_external_device& e = need(external, "attendre_context_adopt: external");
    // Dispatchable Vulkan handles are pointers to opaque structs.
    ExternalDevice device;
    device.instance = static_cast<VkInstance>(e.instance);
    device.physical_device = static_cast<VkPhysicalDevice>(e.physical_device);
    device.device = static_cast<VkDevice>(e.device);
    device.queue = static_cast<VkQueue>(e.queue);
    device.queue_family = e.queue_family;
    device.storage_16bit_enabled = e.storage_16bit_enabled != 0;
    device.get_instance_proc_addr = reinterpret_cast<PFN_vkGetInstanceProcAddr>(e.get_instance_proc_addr);
    require(device.instance && device.physical_device && device.device && device.queue,
            "attendre_context_adopt: instance, physical_device, device and queue must all be set");
    *context = new attendre_context(device, LimitOverrides{});
    return ATTENDRE_OK;
  });
}

void attendre_context_destroy(attendre_context* context) { delete context; }

attendre_status attendre_context_device_name(const attendre_context* context, char* name, size_t* count) {
  return guard([&] {
    return copy_text(need(context, "attendre_context_device_name: context").context.caps().name, name, count,
                     "attendre_context_device_name");
  });
}

attendre_status attendre_context_device_memory(const attendre_context* context, uint64_t* bytes,
                                               uint64_t* peak_bytes) {
  return guard([&] {
    const Context& c = need(context, "attendre_context_device_memory: context").context;
    if (bytes) *bytes = c.device_memory_bytes();
    if (peak_bytes) *peak_bytes = c.peak_device_memory_bytes();
    return ATTENDRE_OK;
  });
}

attendre_status attendre_context_take_validation_messages(attendre_context* context, size_t* messages, char* text,
                                                          size_t* count) {
  return guard([&] {
    Context& c = need(context, "attendre_context_take_validation_messages: context").context;
    need(messages, "attendre_context_take_validation_messages: messages");
    const std::vector<std::string> found = validation_messages(c);
    std::string joined;
    for (const std::string& m : found) joined += m + "\n";
    *messages = found.size();
    if (count) {
      const attendre_status s = copy_text(joined, text, count, "attendre_context_take_validation_messages");
      if (s != ATTENDRE_OK) return s;  // kept for the call with a larger buffer
    }
    clear_validation_messages(c);
    return ATTENDRE_OK;
  });
}

}  // extern "C"
