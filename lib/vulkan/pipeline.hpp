// Compute pipelines built from the embedded SPIR-V, cached per context, and
// the descriptor sets that bind buffers to them.
#pragma once

#include "vulkan/spirv_reflect.hpp"

#include <attendre/context.hpp>
#include <attendre/shader_ids.hpp>
#include <attendre/status.hpp>

#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <vector>

namespace attendre::vk {

class Buffer;

// Identity of a pipeline: which shader variant, how many bindings (0..n-1;
// storage buffers, except the uniform texel buffers of the bits of
// texel_bindings), how many push-constant bytes, and the values of
// specialization constants 0..k-1 (all 32-bit), and whether every subgroup
// must be full (VK_EXT_subgroup_size_control; the workgroup size must then
// be a multiple of DeviceCaps::max_subgroup_size).
struct PipelineKey {
  shaders::ShaderId shader{};
  uint32_t bindings = 0;
  uint32_t texel_bindings = 0;  // bit i: binding i is a uniform texel buffer
  uint32_t push_bytes = 0;
  std::vector<uint32_t> specialization;
  bool full_subgroups = false;
  auto operator<=>(const PipelineKey&) const = default;
};

class ComputePipeline {
 public:
  // Fails (unsupported) where the device's limits refuse the key, or when
  // the driver refuses an object; what was created is destroyed.
  static Result<std::unique_ptr<ComputePipeline>> create(Context& context, const PipelineKey& key);
  ~ComputePipeline();
  ComputePipeline(const ComputePipeline&) = delete;
  ComputePipeline& operator=(const ComputePipeline&) = delete;

  VkPipeline handle() const { return pipeline_; }
  VkPipelineLayout layout() const { return layout_; }
  VkDescriptorSetLayout set_layout() const { return set_layout_; }
  const PipelineKey& key() const { return key_; }
  // Whether the shader reads and writes binding i (from its SPIR-V).
  const BindingAccess& access(uint32_t binding) const { return access_[binding]; }
  // Workgroups one dispatch of it may run (its context's
  // DeviceCaps::max_groups_per_dispatch): CommandRecorder cuts larger grids
  // into pieces, which the pipeline allows (VK_PIPELINE_CREATE_DISPATCH_BASE_BIT).
  uint32_t max_groups_per_dispatch() const { return max_groups_per_dispatch_; }

 private:
  ComputePipeline(Context& context, const PipelineKey& key);
  void destroy();

  VkDevice device_;
  const VkAllocationCallbacks* allocator_;  // the context's, for destruction
  PipelineKey key_;
  uint32_t max_groups_per_dispatch_;
  std::vector<BindingAccess> access_;
  VkShaderModule module_ = VK_NULL_HANDLE;
  VkDescriptorSetLayout set_layout_ = VK_NULL_HANDLE;
  VkPipelineLayout layout_ = VK_NULL_HANDLE;
  VkPipeline pipeline_ = VK_NULL_HANDLE;
};

// Identical pipelines are shared by every kernel of a context (a stack of
// L layers with one configuration builds each pipeline once).
class PipelineCache {
 public:
  explicit PipelineCache(Context& context) : context_(context) {}
  // The pipeline of `key`, built on first use (a failed build is not cached).
  Result<const ComputePipeline*> get(const PipelineKey& key);
  size_t size() const { return pipelines_.size(); }
  void clear() { pipelines_.clear(); }

 private:
  Context& context_;
  std::map<PipelineKey, std::unique_ptr<ComputePipeline>> pipelines_;
};

// A buffer range bound to one storage-buffer binding, or with a
// texel_format to a uniform-texel-buffer binding (a view of that format,
// which the DescriptorArena creates and owns; the offset then meets
// DeviceCaps::texel_alignment and the range holds at most
// DeviceCaps::max_texel_elements elements: texel_view() checks both).
struct BufferBinding {
  const Buffer* buffer = nullptr;
  VkDeviceSize offset = 0;
  VkDeviceSize range = VK_WHOLE_SIZE;
  VkFormat texel_format = VK_FORMAT_UNDEFINED;

  // `count` words from word `first` (a section of a layout: its start meets
  // every device's minStorageBufferOffsetAlignment, at most 256 bytes).
  static BufferBinding words(const Buffer& buffer, uint64_t first, uint64_t count) {
    return {&buffer, first * 4, count * 4};
  }
  // Whether the two bindings share a byte (same buffer, intersecting ranges).
  bool overlaps(const BufferBinding& other) const;
  // The same range as a uniform texel buffer of `format`, or an error
  // (unsupported) naming what the device refuses: texel buffers absent or
  // switched off, a buffer without texel usage (borrowed), an offset off
  // texel_alignment, more elements than max_texel_elements.
  Result<BufferBinding> texel_view(const DeviceCaps& caps, VkFormat format) const;
  bool operator==(const BufferBinding&) const = default;
};

// Descriptor pools owned by one user (a layer, a test); sets live as long
// as the arena. Pools are added as needed.
class DescriptorArena {
 public:
  explicit DescriptorArena(Context& context) : device_(context.device()), allocator_(context.allocator()) {}
  ~DescriptorArena();
  DescriptorArena(const DescriptorArena&) = delete;
  DescriptorArena& operator=(const DescriptorArena&) = delete;

  // A set for `pipeline` with bindings[i] at binding i.
  Result<VkDescriptorSet> bind(const ComputePipeline& pipeline, std::span<const BufferBinding> bindings);

 private:
  Result<VkDescriptorSet> allocate(VkDescriptorSetLayout layout);

  VkDevice device_;
  const VkAllocationCallbacks* allocator_;  // the context's, for destruction
  std::vector<VkDescriptorPool> pools_;
  std::vector<VkBufferView> views_;  // of the texel bindings, destroyed with the arena
};

// Bytes per element of the texel formats attendre binds.
uint32_t texel_bytes(VkFormat format);

}  // namespace attendre::vk
