// A VkBuffer with its own memory, chosen by intent (after VMA): the same code
// is right on a discrete GPU and on unified-memory phones and lavapipe.
#pragma once

#include <attendre/context.hpp>
#include <attendre/status.hpp>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace attendre::vk {

enum class MemoryIntent {
  device,    // device-local, GPU only: memories and scratch
  upload,    // host-visible (coherent if possible): written by the host, read by copies
  readback,  // host-visible, cached if possible: read by the host
};

class MemoryArena;

// Every buffer's size is rounded up to this (the largest storage offset
// alignment a device may ask for), so that what attendre plans, what it
// reports and what the device allocates agree byte for byte.
inline constexpr uint64_t kBufferGranule = 256;
inline uint64_t rounded_bytes(uint64_t bytes) {
  return bytes == 0 ? kBufferGranule : (bytes + kBufferGranule - 1) / kBufferGranule * kBufferGranule;
}

// The first memory type allowed by `allowed` with every `required` flag,
// preferring one with every `preferred` flag; fails (unsupported) naming
// `label` when none has the required ones.
Result<uint32_t> find_memory_type(const VkPhysicalDeviceMemoryProperties& props, uint32_t allowed,
                                  VkMemoryPropertyFlags required, VkMemoryPropertyFlags preferred, const char* label);

// Move-only; destroys its buffer and the memory it owns. Every buffer it
// creates is usable as storage, as a uniform texel buffer and as copy
// source and destination.
class Buffer {
 public:
  Buffer() = default;
  // A buffer with memory of its own; fails with out_of_device_memory past
  // the device's maxMemoryAllocationSize or when the device refuses it.
  static Result<Buffer> create(Context& context, VkDeviceSize bytes, MemoryIntent intent, const char* label);
  // A buffer in `arena`'s memory, which must outlive it.
  static Result<Buffer> create(MemoryArena& arena, VkDeviceSize bytes, const char* label);
  // An application's buffer, borrowed for recording (embedding): never
  // destroyed here, never mapped; `bytes` is how far commands may reach.
  static Buffer borrow(VkBuffer handle, VkDeviceSize bytes, const char* label);
  ~Buffer();
  Buffer(Buffer&& other) noexcept;
  Buffer& operator=(Buffer&& other) noexcept;
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  VkBuffer handle() const { return buffer_; }
  VkDeviceSize size() const { return size_; }  // rounded_bytes() of the size asked for
  // Host pointer for upload/readback buffers (nullptr for device buffers).
  // On non-coherent memory, host writes reach the device at flush() and
  // device writes reach the host at invalidate(); Submission calls both for
  // the buffers its commands read and write.
  void* mapped() const { return shadow_ ? shadow_.get() : mapped_; }
  Status flush() const;
  Status invalidate() const;
  // Arena buffers in host-visible device memory (unified memory): where the
  // host may write their content once, before the device uses it, then
  // flush_host_writes(); nullptr otherwise. Not mapped(): the device's
  // commands treat them as device memory.
  void* host_write_pointer() const { return arena_host_; }
  Status flush_host_writes() const;
  // What the buffer holds, as given at creation (names it in messages and barrier labels).
  const std::string& label() const { return label_; }
  // Whether texel views of it may be made (not a borrowed buffer, whose usage is the application's).
  bool texel_usage() const { return buffer_ != VK_NULL_HANDLE && !borrowed_; }
  explicit operator bool() const { return buffer_ != VK_NULL_HANDLE; }

 private:
  void release();

  Context* context_ = nullptr;
  VkDevice device_ = VK_NULL_HANDLE;
  VkBuffer buffer_ = VK_NULL_HANDLE;
  VkDeviceMemory memory_ = VK_NULL_HANDLE;  // owned; null for arena buffers
  uint64_t memory_bytes_ = 0;               // of memory_, for the context's accounting
  void* arena_host_ = nullptr;              // arena buffers in host-visible memory
  VkDeviceMemory arena_memory_ = VK_NULL_HANDLE;
  VkDeviceSize arena_offset_ = 0;
  VkDeviceSize size_ = 0;
  void* mapped_ = nullptr;
  bool coherent_ = true;
  // Emulated non-coherence (DeviceCaps::non_coherent_host on coherent
  // memory): the host sees this copy, synchronized only by flush/invalidate.
  std::unique_ptr<std::byte[]> shadow_;
  std::string label_;
  bool borrowed_ = false;
};

}  // namespace attendre::vk
