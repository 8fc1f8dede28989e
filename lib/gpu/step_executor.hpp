// Runs the steps of one device object (gpu::Layer, the stack's engine, so
// the encoder-decoder's two stacks too) in the spirit of kompute's
// Sequence: the owner records what a step does and decodes what it read
// back; the executor owns everything around that, once for every owner
// (docs/architecture.md, "Life of one layer step"):
//   - two submit slots (gpu/submit_slot.hpp), so that the host prepares
//     step t+1 while the device runs step t, and the slot of step t waits
//     (fence, with the context's timeout: device_lost) before step t+2;
//   - the finite checks' slots: one per submit slot and one shared by the
//     steps recorded into an application's command buffers, read at the
//     next wait, and every wait reports them in submission order, so that
//     a non-finite value is reported for the first step that had one;
//   - the profiler, attached to every submitted step (one step in flight
//     while it is on: profiles are per step);
//   - tickets (gpu/ticket.hpp) and their collection.
#pragma once

#include "gpu/finite_checks.hpp"
#include "gpu/recorded_steps.hpp"
#include "gpu/submit_slot.hpp"
#include "vulkan/commands.hpp"

#include <attendre/context.hpp>
#include <attendre/embedding.hpp>
#include <attendre/status.hpp>

#include <array>
#include <memory>
#include <span>
#include <vector>

namespace attendre::gpu {

class StepExecutor {
 public:
  static constexpr uint32_t kSlots = 2;
  // The finite checks' slot of steps recorded into applications' command
  // buffers (slots 0 .. kSlots - 1 are the submitted steps').
  static constexpr uint32_t kRecordedChecks = kSlots;
  // The finite checks' slots an owner makes its FiniteChecks with.
  static constexpr uint32_t kCheckSlots = kSlots + 1;
  // Timestamps a profiled step records, one per dispatch piece: a stack
  // step of several blocks records hundreds of dispatches, and the pool
  // (8 bytes a timestamp) exists only while profiling is on, so one size
  // serves the layer and the stack alike.
  static constexpr uint32_t kProfileTimestamps = 4096;

  // Two slots of `upload_bytes` host-visible upload and `readback_bytes`
  // readback each; the owner's `checks` outlive the executor.
  static Result<std::unique_ptr<StepExecutor>> create(Context& context, FiniteChecks& checks, uint64_t upload_bytes,
                                                      const char* upload_label, uint64_t readback_bytes,
                                                      const char* readback_label);

  // Begins the next step in the next slot: after every step when profiling,
  // else after the slot's previous step (its non-finite values reported),
  // with the slot's finite checks selected and the profiler attached. The
  // owner records into slot.submission.recorder(), then calls try_submit.
  Result<SubmitSlot*> try_begin();
  // Submits the slot try_begin gave (waiting for `waits` first): the step's ticket.
  Result<Ticket> try_submit(SubmitSlot& slot, std::span<const SemaphoreWait> waits);
  // The slot whose step the ticket names, its result now collected; fails
  // (invalid_argument) for a ticket of another object or one collected or
  // overwritten already.
  Result<SubmitSlot*> try_collect(const Ticket& ticket);
  // Waits for the slot's step and reports its non-finite values.
  Status try_finish(SubmitSlot& slot);
  // Waits for every step, submitted or recorded, and reports their
  // non-finite values in submission order.
  Status try_finish_all();

  // A recorder for a step into the application's `cb`: the recorded
  // steps' finite checks selected, the acquire barrier recorded.
  vk::CommandRecorder begin_recorded(VkCommandBuffer cb);
  // After the step's commands: the release barrier for `consumer`; its
  // checks are read at the next wait.
  void end_recorded(vk::CommandRecorder& rec, const Consumer& consumer);

  // Fails (invalid_argument, unsupported) for waits no submission can make.
  Status try_check_waits(std::span<const SemaphoreWait> waits) const {
    return slots_[0]->submission.try_check_waits(waits);
  }
  Status try_set_profiling(bool enabled);
  // The last profiled step's kernel times (none while profiling is off).
  Result<std::vector<KernelTime>> try_last_profile();

  // Steps submitted or recorded so far (the next one's number).
  uint64_t steps() const { return steps_; }
  // The slot of the step submitted or recorded last.
  const SubmitSlot& previous_slot() const { return *slots_[(steps_ + kSlots - 1) % kSlots]; }
  // Slot `index`: slot 0's submission and readback also serve the owner's
  // blocking reads (snapshots) and one-off loads, after try_finish_all.
  SubmitSlot& slot(uint32_t index) { return *slots_[index]; }
  const SubmitSlot& slot(uint32_t index) const { return *slots_[index]; }
  // The slots' upload and readback bytes.
  uint64_t staging_bytes() const;

 private:
  StepExecutor(Context& context, FiniteChecks& checks) : context_(context), checks_(checks) {}
  // Waits for the recorded steps and reports their non-finite values.
  Status try_finish_recorded();

  Context& context_;
  FiniteChecks& checks_;
  std::array<std::unique_ptr<SubmitSlot>, kSlots> slots_;
  RecordedSteps recorded_;
  std::unique_ptr<vk::Profiler> profiler_;
  uint64_t steps_ = 0;
};

}  // namespace attendre::gpu
