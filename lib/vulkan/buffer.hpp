// A VkBuffer with its own memory, chosen by intent (after VMA): the same code
// is right on a discrete GPU and on unified-memory phones and lavapipe.
#pragma once

#include <attendre/context.hpp>

#include <cstdint>
#include <string>

namespace attendre::vk {

enum class MemoryIntent {
  device,    // device-local, GPU only: memories and scratch
  upload,    // host-visible, host-coherent: written by the host, read by copies
  readback,  // host-visible, host-coherent, cached if possible: read by the host
};

// Move-only; destroys its buffer and memory. Every buffer is usable as
// storage and as copy source and destination.
class Buffer {
 public:
  Buffer() = default;
  Buffer(Context& context, VkDeviceSize bytes, MemoryIntent intent, const char* label);
  ~Buffer();
  Buffer(Buffer&& other) noexcept;
  Buffer& operator=(Buffer&& other) noexcept;
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  VkBuffer handle() const { return buffer_; }
  VkDeviceSize size() const { return size_; }
  // Host pointer for upload/readback buffers (nullptr for device buffers).
  void* mapped() const { return mapped_; }
  // What the buffer holds, as given at creation (names it in messages and barrier labels).
  const std::string& label() const { return label_; }
  explicit operator bool() const { return buffer_ != VK_NULL_HANDLE; }

 private:
  void release();

  VkDevice device_ = VK_NULL_HANDLE;
  VkBuffer buffer_ = VK_NULL_HANDLE;
  VkDeviceMemory memory_ = VK_NULL_HANDLE;
  VkDeviceSize size_ = 0;
  void* mapped_ = nullptr;
  std::string label_;
};

}  // namespace attendre::vk
