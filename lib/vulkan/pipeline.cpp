#include "vulkan/pipeline.hpp"

#include "vulkan/buffer.hpp"
#include "vulkan/check.hpp"
#include "core/try.hpp"

#include <attendre/error.hpp>

#include <bit>

namespace attendre::vk {
namespace {

constexpr uint32_t kSetsPerPool = 64;
// Storage buffers a kernel binds at most: the portable minimum per stage
// (4), except split products (kernels::splits_outputs), which bind a fifth
// only where the device allows one (checked below).
constexpr uint32_t kMaxBindings = 5;
constexpr uint32_t kMaxTexelBindings = 2;  // a direct product's weights and A (pools sized for that many per set)

}  // namespace

ComputePipeline::ComputePipeline(Context& context, const PipelineKey& key)
    : device_(context.device()),
      allocator_(context.allocator()),
      key_(key),
      max_groups_per_dispatch_(context.caps().max_groups_per_dispatch) {}

// Each object is created into the pipeline under construction, whose
// destructor destroys what exists if a later step fails.
Result<std::unique_ptr<ComputePipeline>> ComputePipeline::create(Context& context, const PipelineKey& key) {
  const DeviceCaps& caps = context.caps();
  const uint32_t storage_bindings = key.bindings - static_cast<uint32_t>(std::popcount(key.texel_bindings));
  if (storage_bindings > kMaxBindings || storage_bindings > caps.max_storage_buffers)
    return Status{ErrorCode::unsupported, std::string(shaders::name(key.shader)) + " binds " +
                                              std::to_string(storage_bindings) +
                                              " storage buffers, more than the device allows"};
  if (key.texel_bindings != 0 && !caps.texel_buffers)
    return Status{ErrorCode::unsupported, std::string(shaders::name(key.shader)) +
                                              " binds uniform texel buffers, which the device lacks or has switched off"};
  if (key.push_bytes > caps.max_push_constants)
    return Status{ErrorCode::unsupported,
                  std::string(shaders::name(key.shader)) + " needs " + std::to_string(key.push_bytes) +
                      " push-constant bytes, more than the device's " + std::to_string(caps.max_push_constants)};
  if (key.full_subgroups && (!caps.subgroup_size_control || caps.max_subgroup_size == 0 || key.specialization.empty() ||
                             key.specialization[0] % caps.max_subgroup_size != 0))
    return Status{ErrorCode::unsupported,
                  std::string(shaders::name(key.shader)) +
                      " needs full subgroups: VK_EXT_subgroup_size_control and a workgroup of a "
                      "multiple of the largest subgroup size"};
  const std::span<const uint32_t> code = shaders::spirv(key.shader);
  std::unique_ptr<ComputePipeline> p(new ComputePipeline(context, key));
  ATTENDRE_TRY_ASSIGN(p->access_, reflect_storage_bindings(code));
  if (p->access_.size() != key.bindings)
    return Status{ErrorCode::invalid_argument,
                  std::string(shaders::name(key.shader)) + " declares " + std::to_string(p->access_.size()) +
                      " storage bindings, the kernel binds " + std::to_string(key.bindings)};
  for (uint32_t i = 0; i < key.bindings; ++i)
    if (p->access_[i].texel != (((key.texel_bindings >> i) & 1u) != 0))
      return Status{ErrorCode::invalid_argument, std::string(shaders::name(key.shader)) + " declares binding " +
                                                     std::to_string(i) + (p->access_[i].texel ? " a texel buffer" : " a storage buffer") +
                                                     ", the kernel binds the other"};
  VkDevice device = p->device_;
  const VkAllocationCallbacks* allocator = p->allocator_;
  VkShaderModuleCreateInfo module_info{VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
  module_info.codeSize = code.size_bytes();
  module_info.pCode = code.data();
  ATTENDRE_TRY(checked(vkCreateShaderModule(device, &module_info, allocator, &p->module_), "vkCreateShaderModule"));

  std::vector<VkDescriptorSetLayoutBinding> bindings(key.bindings);
  for (uint32_t i = 0; i < key.bindings; ++i)
    bindings[i] = {i,
                   ((key.texel_bindings >> i) & 1u) ? VK_DESCRIPTOR_TYPE_UNIFORM_TEXEL_BUFFER
                                                    : VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                   1, VK_SHADER_STAGE_COMPUTE_BIT, nullptr};
  VkDescriptorSetLayoutCreateInfo set_info{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO};
  set_info.bindingCount = key.bindings;
  set_info.pBindings = bindings.data();
  ATTENDRE_TRY(checked(vkCreateDescriptorSetLayout(device, &set_info, allocator, &p->set_layout_),
                       "vkCreateDescriptorSetLayout"));

  VkPushConstantRange push{VK_SHADER_STAGE_COMPUTE_BIT, 0, key.push_bytes};
  VkPipelineLayoutCreateInfo layout_info{VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
  layout_info.setLayoutCount = 1;
  layout_info.pSetLayouts = &p->set_layout_;
  layout_info.pushConstantRangeCount = key.push_bytes ? 1 : 0;
  layout_info.pPushConstantRanges = &push;
  ATTENDRE_TRY(checked(vkCreatePipelineLayout(device, &layout_info, allocator, &p->layout_), "vkCreatePipelineLayout"));

  std::vector<VkSpecializationMapEntry> entries(key.specialization.size());
  for (uint32_t i = 0; i < entries.size(); ++i) entries[i] = {i, i * 4u, 4u};
  VkSpecializationInfo spec{static_cast<uint32_t>(entries.size()), entries.data(), key.specialization.size() * 4,
                            key.specialization.data()};
  VkComputePipelineCreateInfo info{VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO};
  info.stage = {VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO};
  info.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
  info.stage.module = p->module_;
  info.stage.pName = "main";
  if (key.full_subgroups) info.stage.flags = VK_PIPELINE_SHADER_STAGE_CREATE_REQUIRE_FULL_SUBGROUPS_BIT_EXT;
  info.stage.pSpecializationInfo = entries.empty() ? nullptr : &spec;
  info.layout = p->layout_;
  // Vulkan 1.1 core: gl_WorkGroupID then counts from a dispatch's base, so
  // a grid cut into pieces (CommandRecorder::dispatch) runs unchanged.
  info.flags = VK_PIPELINE_CREATE_DISPATCH_BASE_BIT;
  ATTENDRE_TRY(checked(vkCreateComputePipelines(device, VK_NULL_HANDLE, 1, &info, allocator, &p->pipeline_),
                       "vkCreateComputePipelines"));
  return p;
}

ComputePipeline::~ComputePipeline() { destroy(); }

void ComputePipeline::destroy() {
  if (pipeline_) vkDestroyPipeline(device_, pipeline_, allocator_);
  if (layout_) vkDestroyPipelineLayout(device_, layout_, allocator_);
  if (set_layout_) vkDestroyDescriptorSetLayout(device_, set_layout_, allocator_);
  if (module_) vkDestroyShaderModule(device_, module_, allocator_);
  pipeline_ = VK_NULL_HANDLE;
  layout_ = VK_NULL_HANDLE;
  set_layout_ = VK_NULL_HANDLE;
  module_ = VK_NULL_HANDLE;
}

bool BufferBinding::overlaps(const BufferBinding& other) const {
  if (!buffer || buffer != other.buffer) return false;
  const VkDeviceSize end = range == VK_WHOLE_SIZE ? buffer->size() : offset + range;
  const VkDeviceSize other_end = other.range == VK_WHOLE_SIZE ? buffer->size() : other.offset + other.range;
  return offset < other_end && other.offset < end;
}

uint32_t texel_bytes(VkFormat format) {
  switch (format) {
    case VK_FORMAT_R32G32B32A32_SFLOAT:
    case VK_FORMAT_R32G32B32A32_UINT: return 16;
    case VK_FORMAT_R16G16B16A16_SFLOAT:
    case VK_FORMAT_R32G32_UINT: return 8;
    default: return 4;  // R32_UINT, R32_SFLOAT
  }
}

Result<BufferBinding> BufferBinding::texel_view(const DeviceCaps& caps, VkFormat format) const {
  const std::string what = "a texel view of '" + (buffer ? buffer->label() : std::string("no buffer")) + "'";
  if (!caps.texel_buffers) return Status{ErrorCode::unsupported, what + ": uniform texel buffers are absent or switched off"};
  if (!buffer || !buffer->texel_usage())
    return Status{ErrorCode::unsupported, what + ": the buffer was not created for texel views (borrowed)"};
  if (offset % caps.texel_alignment != 0)
    return Status{ErrorCode::unsupported, what + ": offset " + std::to_string(offset) + " is not a multiple of the device's " +
                                              std::to_string(caps.texel_alignment) + "-byte texel alignment"};
  const VkDeviceSize bytes = range == VK_WHOLE_SIZE ? buffer->size() - offset : range;
  const VkDeviceSize elements = bytes / texel_bytes(format);
  if (elements == 0 || elements > caps.max_texel_elements)
    return Status{ErrorCode::unsupported, what + ": " + std::to_string(elements) + " elements, past the device's " +
                                              std::to_string(caps.max_texel_elements) + " per texel buffer"};
  return BufferBinding{buffer, offset, elements * texel_bytes(format), format};
}

Result<const ComputePipeline*> PipelineCache::get(const PipelineKey& key) {
  auto it = pipelines_.find(key);
  if (it == pipelines_.end()) {
    ATTENDRE_TRY_ASSIGN(std::unique_ptr<ComputePipeline> pipeline, ComputePipeline::create(context_, key));
    it = pipelines_.emplace(key, std::move(pipeline)).first;
  }
  return static_cast<const ComputePipeline*>(it->second.get());
}

DescriptorArena::~DescriptorArena() {
  for (VkBufferView view : views_) vkDestroyBufferView(device_, view, allocator_);
  for (VkDescriptorPool pool : pools_) vkDestroyDescriptorPool(device_, pool, allocator_);
}

Result<VkDescriptorSet> DescriptorArena::allocate(VkDescriptorSetLayout layout) {
  VkDescriptorSetAllocateInfo info{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO};
  info.descriptorSetCount = 1;
  info.pSetLayouts = &layout;
  VkDescriptorSet set = VK_NULL_HANDLE;
  if (!pools_.empty()) {
    info.descriptorPool = pools_.back();
    const VkResult r = vkAllocateDescriptorSets(device_, &info, &set);
    if (r == VK_SUCCESS) return set;
    if (r != VK_ERROR_OUT_OF_POOL_MEMORY && r != VK_ERROR_FRAGMENTED_POOL)
      return checked(r, "vkAllocateDescriptorSets");
  }
  const VkDescriptorPoolSize sizes[] = {{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, kSetsPerPool * kMaxBindings},
                                        {VK_DESCRIPTOR_TYPE_UNIFORM_TEXEL_BUFFER, kSetsPerPool * kMaxTexelBindings}};
  VkDescriptorPoolCreateInfo pool_info{VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO};
  pool_info.maxSets = kSetsPerPool;
  pool_info.poolSizeCount = 2;
  pool_info.pPoolSizes = sizes;
  VkDescriptorPool pool = VK_NULL_HANDLE;
  ATTENDRE_TRY(checked(vkCreateDescriptorPool(device_, &pool_info, allocator_, &pool), "vkCreateDescriptorPool"));
  pools_.push_back(pool);
  info.descriptorPool = pool;
  ATTENDRE_TRY(checked(vkAllocateDescriptorSets(device_, &info, &set), "vkAllocateDescriptorSets"));
  return set;
}

Result<VkDescriptorSet> DescriptorArena::bind(const ComputePipeline& pipeline,
                                                  std::span<const BufferBinding> bindings) {
  ATTENDRE_REQUIRE(bindings.size() == pipeline.key().bindings,
                   std::string(shaders::name(pipeline.key().shader)) + ": wrong number of buffer bindings");
  ATTENDRE_TRY_ASSIGN(const VkDescriptorSet set, allocate(pipeline.set_layout()));
  std::vector<VkDescriptorBufferInfo> infos(bindings.size());
  std::vector<VkBufferView> views(bindings.size(), VK_NULL_HANDLE);
  std::vector<VkWriteDescriptorSet> writes(bindings.size());
  for (uint32_t i = 0; i < bindings.size(); ++i) {
    const bool texel = ((pipeline.key().texel_bindings >> i) & 1u) != 0;
    ATTENDRE_REQUIRE(texel == (bindings[i].texel_format != VK_FORMAT_UNDEFINED),
                     std::string(shaders::name(pipeline.key().shader)) + ": binding " + std::to_string(i) +
                         (texel ? " needs a texel view" : " is a storage buffer, not a texel view"));
    writes[i] = {VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET};
    writes[i].dstSet = set;
    writes[i].dstBinding = i;
    writes[i].descriptorCount = 1;
    if (texel) {
      VkBufferViewCreateInfo view_info{VK_STRUCTURE_TYPE_BUFFER_VIEW_CREATE_INFO};
      view_info.buffer = bindings[i].buffer->handle();
      view_info.format = bindings[i].texel_format;
      view_info.offset = bindings[i].offset;
      view_info.range = bindings[i].range;
      views_.reserve(views_.size() + 1);  // so that a created view is always owned
      ATTENDRE_TRY(checked(vkCreateBufferView(device_, &view_info, allocator_, &views[i]), "vkCreateBufferView"));
      views_.push_back(views[i]);
      writes[i].descriptorType = VK_DESCRIPTOR_TYPE_UNIFORM_TEXEL_BUFFER;
      writes[i].pTexelBufferView = &views[i];
    } else {
      infos[i] = {bindings[i].buffer->handle(), bindings[i].offset, bindings[i].range};
      writes[i].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
      writes[i].pBufferInfo = &infos[i];
    }
  }
  vkUpdateDescriptorSets(device_, static_cast<uint32_t>(writes.size()), writes.data(), 0, nullptr);
  return set;
}

}  // namespace attendre::vk
