#include "vulkan/buffer.hpp"

#include "vulkan/check.hpp"
#include "vulkan/context_state.hpp"
#include "vulkan/memory_arena.hpp"
#include "core/try.hpp"

#include <attendre/error.hpp>

#include <cstring>
#include <utility>

namespace attendre::vk {
namespace {
constexpr VkBufferUsageFlags kBufferUsage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_UNIFORM_TEXEL_BUFFER_BIT |
                                            VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT;
}  // namespace

// Picks the first memory type with all of `required`, preferring one with
// all of `preferred` as well.
Result<uint32_t> find_memory_type(const VkPhysicalDeviceMemoryProperties& props, uint32_t allowed,
                                  VkMemoryPropertyFlags required, VkMemoryPropertyFlags preferred, const char* label) {
  int fallback = -1;
  for (uint32_t i = 0; i < props.memoryTypeCount; ++i) {
    if (!(allowed & (1u << i))) continue;
    const VkMemoryPropertyFlags flags = props.memoryTypes[i].propertyFlags;
    if ((flags & required) != required) continue;
    if ((flags & preferred) == preferred) return i;
    if (fallback < 0) fallback = static_cast<int>(i);
  }
  if (fallback < 0)
    return Status{ErrorCode::unsupported, std::string("no suitable memory type for buffer '") + label + "'"};
  return static_cast<uint32_t>(fallback);
}

// A failure midway returns before `buffer` is handed out: its destructor
// frees what was created so far.
Result<Buffer> Buffer::create(Context& context, VkDeviceSize bytes, MemoryIntent intent, const char* label) {
  Buffer buffer;
  buffer.context_ = &context;
  buffer.device_ = context.device();
  buffer.size_ = rounded_bytes(bytes);
  buffer.label_ = label;
  bytes = buffer.size_;  // Vulkan forbids empty buffers; rounding keeps plans and allocations equal
  if (bytes > context.caps().max_allocation)
    return Status{ErrorCode::out_of_device_memory, std::string("buffer '") + label + "' needs " +
                                                       std::to_string(bytes) +
                                                       " bytes, over the device's maxMemoryAllocationSize of " +
                                                       std::to_string(context.caps().max_allocation)};
  VkBufferCreateInfo info{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
  info.size = bytes;
  // Texel usage too, so that any buffer may be viewed as a uniform texel
  // buffer (weights, DeviceCaps::texel_buffers).
  info.usage = kBufferUsage;
  info.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
  ATTENDRE_TRY(checked(vkCreateBuffer(buffer.device_, &info, context.allocator(), &buffer.buffer_), "vkCreateBuffer"));

  VkMemoryRequirements req;
  vkGetBufferMemoryRequirements(buffer.device_, buffer.buffer_, &req);
  VkMemoryPropertyFlags required = 0, preferred = 0;
  switch (intent) {
    case MemoryIntent::device: preferred = VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT; break;
    case MemoryIntent::upload:
      required = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT;
      preferred = required | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
      break;
    case MemoryIntent::readback:
      required = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT;
      preferred = required | VK_MEMORY_PROPERTY_HOST_CACHED_BIT;
      break;
  }
  VkMemoryAllocateInfo alloc{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
  alloc.allocationSize = req.size;
  VkPhysicalDeviceMemoryProperties props;
  vkGetPhysicalDeviceMemoryProperties(context.physical_device(), &props);
  ATTENDRE_TRY_ASSIGN(alloc.memoryTypeIndex, find_memory_type(props, req.memoryTypeBits, required, preferred, label));
  ATTENDRE_TRY(
      checked(vkAllocateMemory(buffer.device_, &alloc, context.allocator(), &buffer.memory_), "vkAllocateMemory"));
  buffer.memory_bytes_ = req.size;
  vk::state_of(context).add_device_memory(buffer.memory_bytes_);
  ATTENDRE_TRY(checked(vkBindBufferMemory(buffer.device_, buffer.buffer_, buffer.memory_, 0), "vkBindBufferMemory"));
  if (intent != MemoryIntent::device) {
    ATTENDRE_TRY(
        checked(vkMapMemory(buffer.device_, buffer.memory_, 0, VK_WHOLE_SIZE, 0, &buffer.mapped_), "vkMapMemory"));
    buffer.coherent_ =
        (props.memoryTypes[alloc.memoryTypeIndex].propertyFlags & VK_MEMORY_PROPERTY_HOST_COHERENT_BIT) != 0;
    if (buffer.coherent_ && context.caps().non_coherent_host) {
      buffer.shadow_ = std::make_unique<std::byte[]>(bytes);
      std::memcpy(buffer.shadow_.get(), buffer.mapped_, bytes);
    }
  }
  return buffer;
}

Result<Buffer> Buffer::create(MemoryArena& arena, VkDeviceSize bytes, const char* label) {
  Buffer buffer;
  buffer.context_ = &arena.context();
  buffer.device_ = arena.context().device();
  buffer.size_ = rounded_bytes(bytes);
  buffer.label_ = label;
  VkBufferCreateInfo info{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
  info.size = buffer.size_;
  // Texel usage too, so that any buffer may be viewed as a uniform texel
  // buffer (weights, DeviceCaps::texel_buffers).
  info.usage = kBufferUsage;
  info.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
  ATTENDRE_TRY(
      checked(vkCreateBuffer(buffer.device_, &info, buffer.context_->allocator(), &buffer.buffer_), "vkCreateBuffer"));
  VkMemoryRequirements req;
  vkGetBufferMemoryRequirements(buffer.device_, buffer.buffer_, &req);
  ATTENDRE_TRY_ASSIGN(const MemoryArena::Slice slice, arena.place(req, label));
  ATTENDRE_TRY(
      checked(vkBindBufferMemory(buffer.device_, buffer.buffer_, slice.memory, slice.offset), "vkBindBufferMemory"));
  buffer.arena_memory_ = slice.memory;
  buffer.arena_offset_ = slice.offset;
  buffer.arena_host_ = slice.host;
  buffer.coherent_ = slice.coherent;
  return buffer;
}

Buffer::~Buffer() { release(); }

Buffer Buffer::borrow(VkBuffer handle, VkDeviceSize bytes, const char* label) {
  Buffer b;
  b.buffer_ = handle;
  b.size_ = bytes;
  b.label_ = label;
  b.borrowed_ = true;
  return b;
}

Status Buffer::flush_host_writes() const {
  if (!arena_host_ || coherent_) return {};
  const VkDeviceSize atom = context_->caps().non_coherent_atom;
  VkMappedMemoryRange range{VK_STRUCTURE_TYPE_MAPPED_MEMORY_RANGE};
  range.memory = arena_memory_;
  range.offset = arena_offset_ / atom * atom;
  range.size = (arena_offset_ + size_ + atom - 1) / atom * atom - range.offset;
  return checked(vkFlushMappedMemoryRanges(device_, 1, &range), "vkFlushMappedMemoryRanges");
}

Status Buffer::flush() const {
  if (shadow_) std::memcpy(mapped_, shadow_.get(), size_);
  if (!mapped_ || coherent_) return {};
  VkMappedMemoryRange range{VK_STRUCTURE_TYPE_MAPPED_MEMORY_RANGE};
  range.memory = memory_;
  range.size = VK_WHOLE_SIZE;
  return checked(vkFlushMappedMemoryRanges(device_, 1, &range), "vkFlushMappedMemoryRanges");
}

Status Buffer::invalidate() const {
  if (mapped_ && !coherent_) {
    VkMappedMemoryRange range{VK_STRUCTURE_TYPE_MAPPED_MEMORY_RANGE};
    range.memory = memory_;
    range.size = VK_WHOLE_SIZE;
    ATTENDRE_TRY(checked(vkInvalidateMappedMemoryRanges(device_, 1, &range), "vkInvalidateMappedMemoryRanges"));
  }
  if (shadow_) std::memcpy(shadow_.get(), mapped_, size_);
  return {};
}

Buffer::Buffer(Buffer&& other) noexcept { *this = std::move(other); }

Buffer& Buffer::operator=(Buffer&& other) noexcept {
  if (this != &other) {
    release();
    context_ = std::exchange(other.context_, nullptr);
    device_ = std::exchange(other.device_, VK_NULL_HANDLE);
    buffer_ = std::exchange(other.buffer_, VK_NULL_HANDLE);
    memory_ = std::exchange(other.memory_, VK_NULL_HANDLE);
    memory_bytes_ = std::exchange(other.memory_bytes_, 0);
    arena_host_ = std::exchange(other.arena_host_, nullptr);
    arena_memory_ = std::exchange(other.arena_memory_, VK_NULL_HANDLE);
    arena_offset_ = std::exchange(other.arena_offset_, 0);
    size_ = std::exchange(other.size_, 0);
    mapped_ = std::exchange(other.mapped_, nullptr);
    coherent_ = std::exchange(other.coherent_, true);
    shadow_ = std::move(other.shadow_);
    label_ = std::move(other.label_);
    borrowed_ = std::exchange(other.borrowed_, false);
  }
  return *this;
}

void Buffer::release() {
  if (buffer_ && !borrowed_) vkDestroyBuffer(device_, buffer_, context_->allocator());
  if (memory_) {
    vkFreeMemory(device_, memory_, context_->allocator());  // unmaps implicitly
    vk::state_of(*context_).device_memory_bytes -= memory_bytes_;
  }
  buffer_ = VK_NULL_HANDLE;
  memory_ = VK_NULL_HANDLE;
  mapped_ = nullptr;
  arena_host_ = nullptr;
  memory_bytes_ = 0;
  shadow_.reset();
  borrowed_ = false;
}

}  // namespace attendre::vk
