#include "core/fail.hpp"
#include "limits.hpp"

#include "timing.hpp"

#include "kernels/kernel_plan.hpp"
#include "interface/bench.h"
#include "kernels/kernel.hpp"
#include "vulkan/api.hpp"
#include "vulkan/buffer.hpp"
#include "vulkan/commands.hpp"

#include <attendre/diagnostics.hpp>
#include <attendre/error.hpp>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

namespace bench {
namespace {

using attendre::kernels::BenchParams;
using attendre::kernels::Kernel;
using attendre::shaders::ShaderId;
namespace vk = attendre::vk;

std::string vendor_name(uint32_t id) {
  switch (id) {
    case 0x1002: return "AMD";
    case 0x1010: return "ImgTec";
    case 0x10DE: return "NVIDIA";
    case 0x13B5: return "ARM";
    case 0x5143: return "Qualcomm";
    case 0x8086: return "Intel";
    case 0x106B: return "Apple";
    case 0x10005: return "Mesa";
    default: break;
  }
  char hex[16];
  std::snprintf(hex, sizeof hex, "0x%04X", id);
  return hex;
}

std::string type_name(VkPhysicalDeviceType type) {
  switch (type) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: return "discrete";
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: return "integrated";
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: return "virtual";
    case VK_PHYSICAL_DEVICE_TYPE_CPU: return "cpu";
    default: return "other";
  }
}

// Driver name and info from VK_KHR_driver_properties when the device has it
// (querying a physical device needs the extension supported, not enabled).
std::string driver_string(const attendre::Context& context) {
  const attendre::DeviceCaps& c = context.caps();
  if (!c.driver_name.empty()) return c.driver_name + (c.driver_info.empty() ? "" : " (" + c.driver_info + ")");
  uint32_t count = 0;
  attendre::vk::vkEnumerateDeviceExtensionProperties(context.physical_device(), nullptr, &count, nullptr);
  std::vector<VkExtensionProperties> extensions(count);
  attendre::vk::vkEnumerateDeviceExtensionProperties(context.physical_device(), nullptr, &count, extensions.data());
  for (const VkExtensionProperties& e : extensions) {
    if (std::string(e.extensionName) != VK_KHR_DRIVER_PROPERTIES_EXTENSION_NAME) continue;
    VkPhysicalDeviceDriverProperties driver{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES};
    VkPhysicalDeviceProperties2 props{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
    props.pNext = &driver;
    attendre::vk::vkGetPhysicalDeviceProperties2(context.physical_device(), &props);
    const std::string info = driver.driverInfo;
    return std::string(driver.driverName) + (info.empty() ? "" : " (" + info + ")");
  }
  return "driver version " + std::to_string(VK_API_VERSION_MAJOR(c.driver_version)) + "." +
         std::to_string(VK_API_VERSION_MINOR(c.driver_version)) + "." +
         std::to_string(VK_API_VERSION_PATCH(c.driver_version));
}

}  // namespace

DeviceInfo describe_device(const attendre::Context& context) {
  const attendre::DeviceCaps& c = context.caps();
  DeviceInfo d;
  d.name = c.name;
  d.vendor = vendor_name(c.vendor_id);
  d.vendor_id = c.vendor_id;
  d.device_id = c.device_id;
  d.driver = driver_string(context);
  d.api_version = std::to_string(VK_API_VERSION_MAJOR(c.api_version)) + "." +
                  std::to_string(VK_API_VERSION_MINOR(c.api_version)) + "." +
                  std::to_string(VK_API_VERSION_PATCH(c.api_version));
  d.type = type_name(c.type);
  d.max_invocations = c.max_invocations;
  d.workgroup = attendre::kernels::plan_kernels(c).workgroup;
  d.max_shared_bytes = c.max_shared_bytes;
  d.subgroup_size = c.subgroup_size;
  d.max_storage_range = c.max_storage_range;
  d.max_allocation = c.max_allocation;
  d.device_local_bytes = c.device_local_bytes;
  d.max_loop_iterations = c.max_loop_iterations;
  d.max_groups_per_dispatch = c.max_groups_per_dispatch;
  d.storage_16bit = c.storage_16bit;
  d.timestamp_period_ns = c.timestamp_period_ns;
  d.variants = attendre::kernel_variants(context);
  d.quirks = c.quirks.describe();
  for (uint32_t f = 0; f < attendre::kFeatureCount; ++f)
    if (c.disabled.has(static_cast<attendre::Feature>(f)))
      d.disabled_features.emplace_back(attendre::feature_name(static_cast<attendre::Feature>(f)));
  return d;
}

Limits measure_limits(attendre::Context& context, bool quick) {
  const attendre::DeviceCaps& caps = context.caps();
  if (!caps.timestamps)
    attendre::fail(attendre::ErrorCode::unsupported, "the device's compute queue has no timestamps to time kernels with");
  const attendre::kernels::KernelPlan plan = attendre::kernels::plan_kernels(caps);
  const uint32_t W = plan.workgroup;
  const uint32_t repeats = quick ? 3 : 7;
  Limits limits;
  vk::DescriptorArena arena(context);

  // Copy: buffers from 4 MiB up to the largest one binding and one
  // allocation allow (64 MiB at most), each copied once per dispatch.
  const uint64_t cap = std::min<uint64_t>({caps.max_storage_range, caps.max_allocation, uint64_t{64} << 20});
  std::vector<uint64_t> sizes;
  for (uint64_t bytes = uint64_t{4} << 20; bytes <= cap; bytes *= quick ? 16 : 4) sizes.push_back(bytes);
  if (sizes.empty()) sizes.push_back(cap / 16 * 16);
  const uint64_t largest = sizes.back();
  vk::Buffer src = vk::Buffer::create(context, largest, vk::MemoryIntent::device, "bench copy source").value_or_throw();
  vk::Buffer dst =
      vk::Buffer::create(context, largest, vk::MemoryIntent::device, "bench copy destination").value_or_throw();
  {
    // Defined contents, so every run copies the same bits.
    vk::Submission init = vk::Submission::create(context).value_or_throw();
    vk::CommandRecorder& rec = *init.begin().value_or_throw();
    rec.fill(src, 0, largest, 0x3F800000u);
    init.submit().or_throw();
    init.wait().or_throw();
  }
  struct Variant {
    const char* name;
    ShaderId shader;
    uint32_t element_bytes;
  };
  for (const Variant& v : {Variant{"vec4", ShaderId::bench_copy, 16}, Variant{"float", ShaderId::bench_copy_scalar, 4}}) {
    const Kernel copy = Kernel::make<BenchParams>(context, arena, v.shader, {W}, {{&src}, {&dst}}).value_or_throw();
    for (uint64_t bytes : sizes) {
      BenchParams p{};
      p.count = static_cast<uint32_t>(bytes / v.element_bytes);
      // About 16 elements per invocation: enough work each, enough invocations to fill the device;
      // one dispatch, never cut into pieces (the grid stride reads gl_NumWorkGroups).
      const uint32_t groups = std::clamp<uint32_t>(p.count / (W * 16), 1,
                                                   std::min(plan.max_groups_x, caps.max_groups_per_dispatch));
      const double ms = time_dispatch(context, repeats, [&](vk::CommandRecorder& rec) { copy.dispatch(rec, p, groups); });
      const double gbps = 2.0 * static_cast<double>(bytes) / (ms * 1e-3) * 1e-9;
      limits.copy.push_back({v.name, bytes, ms, gbps});
      limits.copy_gbps = std::max(limits.copy_gbps, gbps);
    }
  }

  // FMA: grids from a few workgroups per compute unit to many, a fixed
  // number of iterations (well inside drivers' loop limits).
  const uint32_t iterations = 256;
  const std::vector<uint32_t> grid_groups = quick ? std::vector<uint32_t>{64, 256}
                                                  : std::vector<uint32_t>{64, 256, 1024};
  const uint32_t max_groups = std::min(grid_groups.back(), plan.max_groups_x);
  vk::Buffer out = vk::Buffer::create(
      context, uint64_t{max_groups} * W * 16, vk::MemoryIntent::device, "bench fma results").value_or_throw();
  const Kernel fma = Kernel::make<BenchParams>(context, arena, ShaderId::bench_fma, {W}, {{&out}}).value_or_throw();
  for (uint32_t groups : grid_groups) {
    groups = std::min(groups, max_groups);
    BenchParams p{};
    p.iterations = iterations;
    p.multiplier = 0.999f;
    p.addend = 0.001f;
    const double ms = time_dispatch(context, repeats, [&](vk::CommandRecorder& rec) { fma.dispatch(rec, p, groups); });
    const double invocations = double(groups) * W;
    const double flops = invocations * iterations * attendre::kernels::kBenchFmaChains *
                         attendre::kernels::kBenchFmaRounds * 4.0 * 2.0;
    const double gflops = flops / (ms * 1e-3) * 1e-9;
    limits.fma.push_back({"vec4 x 8 chains", static_cast<uint64_t>(invocations), ms, gflops});
    limits.fma_gflops = std::max(limits.fma_gflops, gflops);
  }
  return limits;
}

}  // namespace bench
