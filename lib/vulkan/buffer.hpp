// A VkBuffer with its own memory, chosen by intent (after VMA): the same code
// is right on a discrete GPU and on unified-memory phones and lavapipe.
#pragma once

#include <attendre/context.hpp>

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
  // On non-coherent memory, host writes reach the device at flush() and
  // device writes reach the host at invalidate(); Submission calls both for
  // the buffers its commands read and write.
  void* mapped() const { return shadow_ ? shadow_.get() : mapped_; }
  void flush() const;
  void invalidate() const;
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
  bool coherent_ = true;
  // Emulated non-coherence (DeviceCaps::non_coherent_host on coherent
  // memory): the host sees this copy, synchronized only by flush/invalidate.
  std::unique_ptr<std::byte[]> shadow_;
  std::string label_;
};

}  // namespace attendre::vk
