#include "vulkan/memory_arena.hpp"

#include "vulkan/buffer.hpp"
#include "vulkan/check.hpp"
#include "vulkan/context_state.hpp"
#include "core/try.hpp"

#include <attendre/error.hpp>

#include <algorithm>

namespace attendre::vk {

MemoryArena::MemoryArena(Context& context, uint64_t expected_bytes, const char* label)
    : context_(context), label_(label), expected_(expected_bytes) {}

MemoryArena::~MemoryArena() {
  for (Block& b : blocks_) {
    vkFreeMemory(context_.device(), b.memory, context_.allocator());
    vk::state_of(context_).device_memory_bytes -= b.size;
  }
}

uint64_t MemoryArena::reserved_bytes() const {
  uint64_t total = 0;
  for (const Block& b : blocks_) total += b.size;
  return total;
}

Status MemoryArena::add_block(uint64_t bytes, uint32_t type_bits, const char* label) {
  const DeviceCaps& caps = context_.caps();
  const std::string name(label);
  if (bytes > caps.max_allocation)
    return {ErrorCode::out_of_device_memory,
            name + " needs " + std::to_string(bytes) +
                " bytes in one allocation, over the device's maxMemoryAllocationSize of " +
                std::to_string(caps.max_allocation)};
  VkPhysicalDeviceMemoryProperties props;
  vkGetPhysicalDeviceMemoryProperties(context_.physical_device(), &props);
  if (blocks_.empty()) {
    // Device-local, and host-visible too where the device's memory is unified.
    const VkMemoryPropertyFlags local = VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT;
    ATTENDRE_TRY_ASSIGN(
        memory_type_,
        find_memory_type(props, type_bits, 0, caps.unified_memory ? local | VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT : local,
                         label));
    const VkMemoryPropertyFlags flags = props.memoryTypes[memory_type_].propertyFlags;
    host_visible_ = caps.unified_memory && (flags & VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT) != 0;
    coherent_ = (flags & VK_MEMORY_PROPERTY_HOST_COHERENT_BIT) != 0;
  }
  ATTENDRE_REQUIRE((type_bits >> memory_type_) & 1u, name + " cannot live in the arena's memory type");
  Block b;
  b.size = bytes;
  VkMemoryAllocateInfo alloc{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
  alloc.allocationSize = bytes;
  alloc.memoryTypeIndex = memory_type_;
  ATTENDRE_TRY(
      checked(vkAllocateMemory(context_.device(), &alloc, context_.allocator(), &b.memory), "vkAllocateMemory"));
  vk::state_of(context_).add_device_memory(b.size);
  blocks_.push_back(b);  // the destructor frees it from here on, even if mapping fails
  if (host_visible_)
    ATTENDRE_TRY(
        checked(vkMapMemory(context_.device(), blocks_.back().memory, 0, VK_WHOLE_SIZE, 0, &blocks_.back().host),
                "vkMapMemory"));
  return {};
}

std::optional<uint64_t> MemoryArena::fit(uint64_t used, uint64_t size, uint64_t bytes, uint64_t alignment) {
  const uint64_t offset = (used + alignment - 1) / alignment * alignment;
  if (offset + bytes > size) return std::nullopt;
  return offset;
}

uint64_t MemoryArena::block_bytes(uint64_t bytes, uint64_t expected, uint64_t placed, uint64_t max_allocation) {
  const uint64_t remaining = expected > placed ? expected - placed : 0;
  return std::max(bytes, std::min(remaining, max_allocation));
}

std::vector<uint64_t> MemoryArena::plan_blocks(std::span<const uint64_t> placements, uint64_t max_allocation) {
  uint64_t expected = 0, placed = 0, used = 0;
  for (uint64_t p : placements) expected += p;
  std::vector<uint64_t> blocks;
  for (uint64_t p : placements) {
    std::optional<uint64_t> offset = blocks.empty() ? std::nullopt : fit(used, blocks.back(), p, kAlignment);
    if (!offset) {
      blocks.push_back(block_bytes(p, expected, placed, max_allocation));
      offset = 0;
    }
    used = *offset + p;
    placed += p;
  }
  return blocks;
}

Result<MemoryArena::Slice> MemoryArena::place(const VkMemoryRequirements& req, const char* label) {
  const uint64_t alignment = std::max<uint64_t>(kAlignment, req.alignment);
  const uint64_t bytes = placed_bytes(req.size);
  std::optional<uint64_t> offset =
      blocks_.empty() ? std::nullopt : fit(blocks_.back().used, blocks_.back().size, bytes, alignment);
  if (!offset) {
    // Exact when the caller's expectation is and fits one allocation.
    ATTENDRE_TRY(
        add_block(block_bytes(bytes, expected_, placed_, context_.caps().max_allocation), req.memoryTypeBits, label));
    offset = 0;
  }
  Block& b = blocks_.back();
  b.used = *offset + bytes;
  placed_ += bytes;
  return Slice{b.memory, *offset, b.host ? static_cast<std::byte*>(b.host) + *offset : nullptr, coherent_};
}

}  // namespace attendre::vk
