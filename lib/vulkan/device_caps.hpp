// What a device can do and what attendre may use of it, decided before the
// device is created: its limits and optional features queried once
// (query_caps, which also decides every driver quirk), then narrowed by the
// application's switches or the environment's (features off, preferences
// over quirks), by the features an adopted device was created with, by
// limit overrides, and the kernel family chosen. Context (context.cpp)
// calls these in order; kernels::plan_kernels reads the result.
#pragma once

#include <vulkan/vulkan.h>

#include <attendre/context.hpp>
#include <attendre/status.hpp>

#include <optional>

namespace attendre::vk {

bool has_device_extension(VkPhysicalDevice physical, const char* name);

// The device's limits, optional features and driver quirks; fails
// (unsupported) for a device attendre cannot run on.
Result<DeviceCaps> query_caps(VkPhysicalDevice physical, uint32_t queue_family);

// On an adopted device, the features that need enabling at vkCreateDevice
// count only where the application says it enabled them.
void keep_enabled(DeviceCaps& caps, const ExternalDevice& external);

// The application's (else the environment's) switches: features off
// (disabled_features, ATTENDRE_DISABLE) and the preferences that clear the
// quirks half_loads_lane_by_lane, byte_loads_lane_by_lane and
// half_math_emulated (prefer_*, ATTENDRE_HALF_LOADS, _BYTE_LOADS,
// _HALF_MATH). The same for created and adopted devices.
Status apply_switches(DeviceCaps& caps, const ContextOptions& options);
Status apply_switches(DeviceCaps& caps, const ExternalDevice& external);

// The kernel family: requested, else ATTENDRE_KERNELS, else direct where the
// quirk barriers_switch_context holds.
Result<DeviceCaps::KernelStyle> kernel_style(std::optional<DeviceCaps::KernelStyle> requested, const DeviceCaps& caps);

// Clamps the caps to `limits` (LimitOverrides, e.g. the portable ones).
void apply_limits(DeviceCaps& caps, const LimitOverrides& limits);

}  // namespace attendre::vk
