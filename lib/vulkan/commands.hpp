// Command recording with methods named by intent (after uVkCompute), a
// reusable command buffer with its fence, and GPU timestamps.
#pragma once

#include "vulkan/hazards.hpp"
#include "vulkan/pipeline.hpp"

#include <attendre/context.hpp>
#include <attendre/embedding.hpp>
#include <attendre/status.hpp>

#include <algorithm>
#include <cstdint>
#include <span>
#include <optional>
#include <string>
#include <vector>

namespace attendre::vk {

class Buffer;
class TimestampPool;
class Profiler;

// A buffer range that one dispatch binds, and whether the shader reads or
// writes it (from its SPIR-V, see spirv_reflect.hpp).
struct BufferUse {
  const Buffer* buffer = nullptr;
  VkDeviceSize offset = 0, size = 0;
  bool reads = false, writes = false;
};

// Workgroup counts (or a base) of a dispatch in x, y and z.
struct DispatchGrid {
  uint32_t x = 1, y = 1, z = 1;
};

// Cuts a grid into pieces of at most `max_groups` workgroups each (at least
// 1), calling piece(base, count) in order: whole z layers when an x * y layer
// fits, else whole x rows, else runs of one row. One piece when it all fits.
template <class Piece>
void for_each_piece(const DispatchGrid& grid, uint32_t max_groups, Piece&& piece) {
  const uint64_t limit = max_groups == 0 ? 1 : max_groups;
  const uint64_t layer = uint64_t{grid.x} * grid.y;
  if (layer * grid.z <= limit) return piece(DispatchGrid{0, 0, 0}, grid);
  if (layer <= limit) {
    const uint32_t step = static_cast<uint32_t>(limit / layer);
    for (uint32_t z = 0; z < grid.z; z += std::min(step, grid.z - z))
      piece(DispatchGrid{0, 0, z}, DispatchGrid{grid.x, grid.y, std::min(step, grid.z - z)});
    return;
  }
  for (uint32_t z = 0; z < grid.z; ++z) {
    if (grid.x <= limit) {
      const uint32_t step = static_cast<uint32_t>(limit / grid.x);
      for (uint32_t y = 0; y < grid.y; y += std::min(step, grid.y - y))
        piece(DispatchGrid{0, y, z}, DispatchGrid{grid.x, std::min(step, grid.y - y), 1});
      continue;
    }
    const uint32_t step = static_cast<uint32_t>(limit);
    for (uint32_t y = 0; y < grid.y; ++y)
      for (uint32_t x = 0; x < grid.x; x += std::min(step, grid.x - x))
        piece(DispatchGrid{x, y, z}, DispatchGrid{std::min(step, grid.x - x), 1, 1});
  }
}

// Appends work to a command buffer that someone else owns (a Submission
// here, or an application's own command buffer when embedding).
//
// Barriers are derived, never placed by hand: every dispatch, copy and fill
// declares the byte ranges it reads and writes, and a barrier is recorded
// right before a command whose ranges overlap a write since the last
// barrier, or that writes over a pending read (HazardTracker). Nothing
// relies on a device executing commands in order.
class CommandRecorder {
 public:
  // `label` inserts debug labels naming each barrier's reason when the
  // context has VK_EXT_debug_utils (nullptr: none).
  CommandRecorder(VkCommandBuffer cmd, PFN_vkCmdInsertDebugUtilsLabelEXT label = nullptr)
      : cmd_(cmd), label_(label) {}
  CommandRecorder(const CommandRecorder&) = delete;
  CommandRecorder& operator=(const CommandRecorder&) = delete;
  CommandRecorder(CommandRecorder&&) = default;  // a Submission's, moved with it

  // Timestamps around every dispatch, labelled by shader, until detached.
  void attach(Profiler* profiler);

  // `uses`: every buffer range the descriptor set binds, with its access.
  // A grid of more workgroups than the pipeline's max_groups_per_dispatch()
  // is recorded as several dispatches (vkCmdDispatchBase, for_each_piece)
  // with no barrier between them: one logical dispatch, one set of accesses.
  // `label` names the dispatch in profiles and barrier reasons (the
  // shader's name when null); it must outlive the recording.
  void dispatch(const ComputePipeline& pipeline, VkDescriptorSet set, std::span<const BufferUse> uses,
                const void* push, uint32_t push_bytes, uint32_t groups_x, uint32_t groups_y = 1,
                uint32_t groups_z = 1, const char* label = nullptr);

  void copy(const Buffer& src, VkDeviceSize src_offset, const Buffer& dst, VkDeviceSize dst_offset, VkDeviceSize bytes);
  void fill(const Buffer& dst, VkDeviceSize offset, VkDeviceSize bytes, uint32_t value);
  // Writes host words into `dst` from the command buffer itself
  // (vkCmdUpdateBuffer, in pieces of at most 64 KiB): the data is copied at
  // record time, so nothing host-visible must outlive the recording.
  // Fails (invalid_argument) unless offset and size are multiples of 4.
  Status update(const Buffer& dst, VkDeviceSize offset, VkDeviceSize bytes, const void* data);
  void timestamp(const TimestampPool& pool, uint32_t index);
  void reset(const TimestampPool& pool);

  // Orders everything recorded before against everything after: for work
  // the tracker cannot see (earlier submissions, an application's commands).
  void barrier(const char* why);
  // Makes device writes to host-visible buffers visible to the host; the
  // owner records it last, before the host reads mapped memory.
  void host_barrier();
  // Embedding: what an application's command buffer did before this
  // recorder's first command (any stage, any write) is made visible to it,
  // and its earlier reads finish before it writes. Recorded first.
  void acquire();
  // Embedding: this recorder's writes (shader and transfer) are made visible
  // to the application's `stages` and `access`, and to the host. Recorded last.
  void release(VkPipelineStageFlags stages, VkAccessFlags access);
  // Host-visible buffers the commands read (to flush before submitting) and
  // write (to invalidate once they completed).
  const std::vector<const Buffer*>& host_reads() const { return host_reads_; }
  const std::vector<const Buffer*>& host_writes() const { return host_writes_; }

  // Tests only: record no derived barrier, to prove that synchronization
  // validation reports the hazards they prevent.
  void disable_derived_barriers_for_test() { derive_ = false; }

  VkCommandBuffer handle() const { return cmd_; }

  // What was recorded so far, for reports of the command structure.
  // `dispatches` counts logical dispatches (dispatch() calls with work),
  // `pieces` the vkCmdDispatch* commands they were recorded as.
  struct Counts {
    uint32_t dispatches = 0, barriers = 0, copies = 0, pieces = 0;
  };
  const Counts& counts() const { return counts_; }

 private:
  // Records a barrier first if `accesses` must wait for pending ones, then
  // adds them to the pending set.
  void order(std::span<const BufferAccess> accesses);
  void record_barrier(const std::string& why);

  VkCommandBuffer cmd_;
  PFN_vkCmdInsertDebugUtilsLabelEXT label_;
  HazardTracker pending_;
  Counts counts_;
  Profiler* profiler_ = nullptr;
  bool derive_ = true;
  std::vector<const Buffer*> host_reads_, host_writes_;
  std::vector<BufferAccess> scratch_;  // reused per dispatch
};

// One primary command buffer and its fence, reused step after step; with
// timeline semaphores (DeviceCaps::timeline_semaphore) also a timeline
// semaphore (the context's, see ContextState::timelines) that submission
// number n signals to timeline_value(n), for the application's submissions
// to wait on (Ticket::semaphore).
//
// Every fallible call returns a Status or Result. After a failed wait the
// submission stays pending, so that nothing the device may still run is
// reused or destroyed.
class Submission {
 public:
  // Fails when the driver refuses the command buffer, fence or semaphore;
  // what was created is freed.
  static Result<Submission> create(Context& context);
  ~Submission();
  Submission(Submission&& other) noexcept;  // not while a Ticket names it
  Submission(const Submission&) = delete;
  Submission& operator=(const Submission&) = delete;
  Submission& operator=(Submission&&) = delete;

  // Waits for the previous submission, then starts recording anew; the
  // recorder stays valid until submit().
  Result<CommandRecorder*> begin();
  // The recorder of the submission being recorded (between begin and submit).
  CommandRecorder& recorder() { return *recorder_; }
  // Ends recording (with a host barrier when mapped memory was written),
  // flushes the mapped memory the commands read, and submits, waiting for
  // `waits` first (checked beforehand with check_waits).
  Status submit(std::span<const SemaphoreWait> waits = {});
  // Fails with invalid_argument for a wait without a semaphore, unsupported
  // for a timeline value on a context without timeline semaphores. Callers
  // check before changing any state.
  Status check_waits(std::span<const SemaphoreWait> waits) const;
  // The timeline semaphore (null without timeline semaphores).
  VkSemaphore timeline() const { return timeline_; }
  // The value submission number `n` (its submitted() right after) signals.
  uint64_t timeline_value(uint64_t n) const { return timeline_base_ + n; }
  // Blocks until the submitted work finished and invalidates the mapped
  // memory it wrote; device loss surfaces here (device_lost, also when the
  // fence timeout of ContextOptions passes).
  Status wait();
  bool pending() const { return pending_; }

  // Submissions so far; a ticket names the one it waits for by this count.
  uint64_t submitted() const { return submitted_; }
  // Whether submission number `n` (its submitted() right after) finished,
  // without blocking; later ones reuse the fence, so an older `n` is done.
  Result<bool> finished(uint64_t n) const;
  // Waits up to `timeout_ns` for submission `n`; true once it finished
  // (then as wait(), mapped memory invalidated), false at the timeout.
  Result<bool> wait_for(uint64_t n, uint64_t timeout_ns);


 private:
  explicit Submission(Context* context) : context_(context) {}

  Context* context_;  // null once moved from
  VkCommandBuffer cmd_ = VK_NULL_HANDLE;
  VkFence fence_ = VK_NULL_HANDLE;
  VkSemaphore timeline_ = VK_NULL_HANDLE;
  uint64_t timeline_base_ = 0;  // the value the semaphore had reached when this Submission took it
  std::optional<CommandRecorder> recorder_;
  std::vector<const Buffer*> to_invalidate_;  // mapped buffers the pending submission writes
  bool pending_ = false;
  bool recording_ = false;
  uint64_t submitted_ = 0;
};

// GPU timestamps; read() converts ticks to nanoseconds with the device's
// (fractional) timestamp period.
class TimestampPool {
 public:
  // Fails (unsupported) where the compute queue has no timestamps.
  static Result<TimestampPool> create(Context& context, uint32_t count);
  ~TimestampPool();
  TimestampPool(TimestampPool&& other) noexcept;
  TimestampPool(const TimestampPool&) = delete;
  TimestampPool& operator=(const TimestampPool&) = delete;
  TimestampPool& operator=(TimestampPool&&) = delete;

  VkQueryPool handle() const { return pool_; }
  uint32_t count() const { return count_; }
  // Nanoseconds of the first `count` timestamps (0: all) since the first one.
  Result<std::vector<double>> read_ns(uint32_t count = 0) const;

 private:
  TimestampPool(Context& context, uint32_t count, uint64_t mask);

  VkDevice device_;
  const VkAllocationCallbacks* allocator_;  // the context's, for destruction
  VkQueryPool pool_ = VK_NULL_HANDLE;
  uint32_t count_;
  double period_ns_;
  uint64_t mask_;
};

// GPU time of each dispatch of one submission. A timestamp goes before the
// first dispatch and after each piece of one (CommandRecorder::dispatch);
// since barriers serialize the kernels of a step, each difference is one
// piece's time (with its barrier's wait), and a dispatch's time is the sum
// of its pieces'.
class Profiler {
 public:
  // Fails as TimestampPool::create. `max_dispatches`: timestamps after the
  // first, one per piece; later pieces go unmeasured.
  static Result<Profiler> create(Context& context, uint32_t max_dispatches);

  struct Sample {
    std::string label;
    double ns = 0.0;               // the whole logical dispatch
    uint32_t pieces = 1;           // dispatches it was recorded as
    double longest_piece_ns = 0.0;  // what a watchdog sees
  };
  // The samples of the last recorded submission; call after it completed.
  Result<std::vector<Sample>> read() const;

 private:
  explicit Profiler(TimestampPool pool) : pool_(std::move(pool)) {}

  friend class CommandRecorder;
  void begin(VkCommandBuffer cmd);
  // A timestamp after one piece; `first` starts a new logical dispatch.
  void mark(VkCommandBuffer cmd, const char* label, bool first);

  // Timestamps first..last end the pieces of one logical dispatch.
  struct Mark {
    std::string label;
    uint32_t first = 0, last = 0;
  };
  TimestampPool pool_;
  std::vector<Mark> marks_;
  uint32_t written_ = 0;  // timestamps written after the first
  bool started_ = false;
};

}  // namespace attendre::vk
