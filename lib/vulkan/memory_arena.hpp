// Device memory shared by many buffers that live and die together (a
// model's weights): a few vkAllocateMemory calls, each sized for what is
// still expected, instead of one per buffer. On unified memory
// (DeviceCaps::unified_memory) the blocks are host-visible and mapped, so
// weights are written in place without staging.
#pragma once

#include <attendre/context.hpp>
#include <attendre/status.hpp>

#include <cstdint>
#include <span>
#include <optional>
#include <vector>

namespace attendre::vk {

class MemoryArena {
 public:
  // Every placement starts on this boundary (the portable storage-buffer
  // offset alignment), so planners can predict an arena's size exactly.
  static constexpr uint64_t kAlignment = 256;
  static uint64_t placed_bytes(uint64_t bytes) { return (bytes + kAlignment - 1) / kAlignment * kAlignment; }
  // Where a placement of `bytes` starts in a block with `used` bytes taken,
  // or nullopt when it does not fit the block's `size`.
  static std::optional<uint64_t> fit(uint64_t used, uint64_t size, uint64_t bytes, uint64_t alignment);
  // The block a placement that fits no block opens: what is still expected
  // (or the placement, if larger), within the device's largest allocation
  // (drivers cap it at 1-4 GiB).
  static uint64_t block_bytes(uint64_t bytes, uint64_t expected, uint64_t placed, uint64_t max_allocation);
  // The blocks an arena expecting the sum of `placements` (placed_bytes
  // each, in placing order) allocates: planners check them against
  // maxMemoryAllocationSize without allocating.
  static std::vector<uint64_t> plan_blocks(std::span<const uint64_t> placements, uint64_t max_allocation);
  // Bytes placed so far (the arena's blocks may hold more: reserved_bytes()).
  uint64_t placed() const { return placed_; }

  // `expected_bytes`: what the caller means to place, summed over
  // placed_bytes() of each buffer; the first block is that large.
  MemoryArena(Context& context, uint64_t expected_bytes, const char* label);
  ~MemoryArena();
  MemoryArena(const MemoryArena&) = delete;
  MemoryArena& operator=(const MemoryArena&) = delete;

  struct Slice {
    VkDeviceMemory memory = VK_NULL_HANDLE;
    VkDeviceSize offset = 0;
    void* host = nullptr;  // mapped address on unified memory
    bool coherent = true;
  };
  // Room for a buffer with these requirements (Buffer's arena create()):
  // fails when a new block exceeds maxMemoryAllocationSize or the device
  // refuses it, the arena unchanged.
  Result<Slice> place(const VkMemoryRequirements& requirements, const char* label);

  Context& context() const { return context_; }
  bool host_visible() const { return host_visible_; }
  // Bytes of the blocks allocated so far.
  uint64_t reserved_bytes() const;

 private:
  struct Block {
    VkDeviceMemory memory = VK_NULL_HANDLE;
    uint64_t size = 0, used = 0;
    void* host = nullptr;
  };
  Status add_block(uint64_t bytes, uint32_t type_bits, const char* label);

  Context& context_;
  std::string label_;
  uint64_t expected_ = 0, placed_ = 0;
  uint32_t memory_type_ = 0;
  bool host_visible_ = false, coherent_ = true;
  std::vector<Block> blocks_;
};

}  // namespace attendre::vk
