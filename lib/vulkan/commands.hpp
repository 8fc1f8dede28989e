// Command recording with methods named by intent (after uVkCompute), a
// reusable command buffer with its fence, and GPU timestamps.
#pragma once

#include "vulkan/pipeline.hpp"

#include <attendre/context.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace attendre::vk {

class Buffer;
class TimestampPool;
class Profiler;

// Appends work to a command buffer that someone else owns (a Submission
// here, or an application's own command buffer when embedding).
class CommandRecorder {
 public:
  explicit CommandRecorder(VkCommandBuffer cmd) : cmd_(cmd) {}

  // Timestamps around every dispatch, labelled by shader, until detached.
  void attach(Profiler* profiler);

  void dispatch(const ComputePipeline& pipeline, VkDescriptorSet set, const void* push, uint32_t push_bytes,
                uint32_t groups_x, uint32_t groups_y = 1, uint32_t groups_z = 1);
  template <class Params>
  void dispatch(const ComputePipeline& pipeline, VkDescriptorSet set, const Params& params, uint32_t groups_x,
                uint32_t groups_y = 1, uint32_t groups_z = 1) {
    dispatch(pipeline, set, &params, sizeof(Params), groups_x, groups_y, groups_z);
  }

  // Makes every earlier shader or transfer write visible to every later
  // shader or transfer access. `why` documents the dependency at the call
  // site (and names it in debuggers).
  void barrier(const char* why);

  void copy(const Buffer& src, VkDeviceSize src_offset, const Buffer& dst, VkDeviceSize dst_offset, VkDeviceSize bytes);
  void fill(const Buffer& dst, VkDeviceSize offset, VkDeviceSize bytes, uint32_t value);
  void timestamp(const TimestampPool& pool, uint32_t index);
  void reset(const TimestampPool& pool);

  VkCommandBuffer handle() const { return cmd_; }

  // What was recorded so far, for reports of the command structure.
  struct Counts {
    uint32_t dispatches = 0, barriers = 0, copies = 0;
  };
  const Counts& counts() const { return counts_; }

 private:
  VkCommandBuffer cmd_;
  Counts counts_;
  Profiler* profiler_ = nullptr;
};

// One primary command buffer and its fence, reused step after step.
class Submission {
 public:
  explicit Submission(Context& context);
  ~Submission();
  Submission(const Submission&) = delete;
  Submission& operator=(const Submission&) = delete;

  // Waits for the previous submission, then starts recording anew.
  CommandRecorder begin();
  void submit();
  // Blocks until the submitted work finished; device loss surfaces here.
  void wait();
  bool pending() const { return pending_; }

 private:
  Context& context_;
  VkCommandBuffer cmd_ = VK_NULL_HANDLE;
  VkFence fence_ = VK_NULL_HANDLE;
  bool pending_ = false;
  bool recording_ = false;
};

// GPU timestamps; read() converts ticks to nanoseconds with the device's
// (fractional) timestamp period.
class TimestampPool {
 public:
  TimestampPool(Context& context, uint32_t count);
  ~TimestampPool();
  TimestampPool(const TimestampPool&) = delete;
  TimestampPool& operator=(const TimestampPool&) = delete;

  VkQueryPool handle() const { return pool_; }
  uint32_t count() const { return count_; }
  // Nanoseconds of the first `count` timestamps (0: all) since the first one.
  std::vector<double> read_ns(uint32_t count = 0) const;

 private:
  VkDevice device_;
  VkQueryPool pool_ = VK_NULL_HANDLE;
  uint32_t count_;
  double period_ns_;
  uint64_t mask_;
};

// GPU time of each dispatch of one submission. A timestamp goes before the
// first dispatch and after each one; since barriers serialize the kernels of
// a step, each difference is one kernel's time (with its barrier's wait).
class Profiler {
 public:
  Profiler(Context& context, uint32_t max_dispatches);

  struct Sample {
    std::string label;
    double ns = 0.0;
  };
  // The samples of the last recorded submission; call after it completed.
  std::vector<Sample> read() const;

 private:
  friend class CommandRecorder;
  void begin(VkCommandBuffer cmd);
  void mark(VkCommandBuffer cmd, std::string label);

  TimestampPool pool_;
  std::vector<std::string> labels_;
  bool started_ = false;
};

}  // namespace attendre::vk
