// Runs the steps of one device object (gpu::Layer, the stack's engine, so
// the encoder-decoder's two stacks too, and gpu::KeyValueMemory's inserts
// and retrievals) in the spirit of kompute's
// Sequence: the owner records what a step does and decodes what it read
// back; the executor owns everything around that, once for every owner
// (docs/architecture.md, "Life of one layer step"):
//   - two submit slots (gpu/submit_slot.hpp), so that the host prepares
//     step t+1 while the device runs step t, and the slot of step t waits
//     (fence, with the context's timeout: device_lost) before step t+2
//     (or one slot, for an owner whose every step waits for the last);
//   - the finite checks' slots: one per submit slot and one shared by the
//     steps recorded into an application's command buffers, read at the
//     next wait, and every wait reports them in submission order, so that
//     a non-finite value is reported for the first step that had one;
//   - the profiler, attached to every submitted step (one step in flight
//     while it is on: profiles are per step);
//   - tickets (gpu/ticket.hpp) and their collection;
//   - the steps' names in errors (StepNames: "step 3", "retrieval 2").
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
#include <string>
#include <vector>

namespace attendre::gpu {

// How an owner's steps are named in errors: a counted step as "<counted>
// <n>" (n counts the counted steps, submitted or recorded, from 0); an
// uncounted one, and the recorded steps read together, by the counted step
// that follows them ("<recorded> before <counted> <n>"). The layer and the
// stack count every step; the K/V memory counts its retrievals only.
struct StepNames {
  const char* counted = "step";
  const char* uncounted = "a step";
  const char* recorded = "a recorded step";
};

// Whether a step takes the next number of StepNames::counted.
enum class StepKind { counted, uncounted };

class StepExecutor {
 public:
  // The slots of an executor that overlaps steps (the layer's, the stack's);
  // at most this many.
  static constexpr uint32_t kSlots = 2;
  // The finite checks' slots an owner of `slots` submit slots makes its
  // FiniteChecks with: one per submit slot, then the recorded steps' one.
  static constexpr uint32_t check_slots(uint32_t slots) { return slots + 1; }
  static constexpr uint32_t kCheckSlots = kSlots + 1;  // check_slots(kSlots)
  // Timestamps a profiled step records, one per dispatch piece: a stack
  // step of several blocks records hundreds of dispatches, and the pool
  // (8 bytes a timestamp) exists only while profiling is on, so one size
  // serves the layer and the stack alike.
  static constexpr uint32_t kProfileTimestamps = 4096;

  // `slots` (1 .. kSlots) slots of `upload_bytes` host-visible upload and
  // `readback_bytes` readback each; the owner's `checks` (made with
  // check_slots(slots) slots) outlive the executor.
  static Result<std::unique_ptr<StepExecutor>> create(Context& context, FiniteChecks& checks, uint64_t upload_bytes,
                                                      const char* upload_label, uint64_t readback_bytes,
                                                      const char* readback_label, uint32_t slots = kSlots,
                                                      StepNames names = {});

  // Waits for what the next begin waits for: every step when
  // profiling, else the next slot's previous step, with the non-finite
  // values of it and of the steps before it reported in submission order.
  // An owner calls it before committing a step's host state, so that an
  // earlier step's failure leaves that state unchanged.
  Status ready();
  // Begins the next step in the next slot, after ready, with the slot's
  // finite checks selected and the profiler attached. The owner records
  // into slot.submission.recorder(), then calls submit.
  Result<SubmitSlot*> begin();
  // Submits the slot begin gave (waiting for `waits` first): the step's ticket.
  Result<Ticket> submit(SubmitSlot& slot, std::span<const SemaphoreWait> waits = {},
                            StepKind kind = StepKind::counted);
  // The slot whose step the ticket names, its result now collected; fails
  // (invalid_argument) for a ticket of another object or one collected or
  // overwritten already.
  Result<SubmitSlot*> collect(const Ticket& ticket);
  // Waits for the slot's step and reports its non-finite values (only its
  // own: a result is the answer of its step).
  Status finish(SubmitSlot& slot);
  // Waits for every step, submitted or recorded, and reports their
  // non-finite values in submission order.
  Status finish_all();

  // A recorder for a step into the application's `cb`: the recorded
  // steps' finite checks selected, the acquire barrier recorded.
  vk::CommandRecorder begin_recorded(VkCommandBuffer cb);
  // After the step's commands: the release barrier for `consumer`; its
  // checks are read at the next wait.
  void end_recorded(vk::CommandRecorder& rec, const Consumer& consumer, StepKind kind = StepKind::counted);

  // Fails (invalid_argument, unsupported) for waits no submission can make.
  Status check_waits(std::span<const SemaphoreWait> waits) const {
    return slots_[0]->submission.check_waits(waits);
  }
  Status set_profiling(bool enabled);
  // The last profiled step's kernel times (none while profiling is off).
  Result<std::vector<KernelTime>> last_profile();

  // Steps submitted or recorded so far (the next one's number).
  uint64_t steps() const { return steps_; }
  // The slot of the step submitted or recorded last.
  const SubmitSlot& previous_slot() const { return *slots_[(steps_ + slots_.size() - 1) % slots_.size()]; }
  // Slot `index`: slot 0's submission and readback also serve the owner's
  // blocking reads (snapshots) and one-off loads, after finish_all.
  SubmitSlot& slot(uint32_t index) { return *slots_[index]; }
  const SubmitSlot& slot(uint32_t index) const { return *slots_[index]; }
  // The slots' upload and readback bytes.
  uint64_t staging_bytes() const;

 private:
  StepExecutor(Context& context, FiniteChecks& checks, StepNames names)
      : context_(context), checks_(checks), names_(names) {}
  // Waits for the steps up to step `last` (by steps()' numbering) whose
  // checks are still to be read, and reports their non-finite values in
  // submission order: the first step that had one is named.
  Status finish_through(uint64_t last);
  // Waits for the recorded steps and reports their non-finite values.
  Status finish_recorded();
  // The name of the next submitted step of `kind` (counted: it takes the next number).
  std::string next_name(StepKind kind);
  // The finite checks' slot of the recorded steps (after the submit slots').
  uint32_t recorded_checks() const { return static_cast<uint32_t>(slots_.size()); }

  Context& context_;
  FiniteChecks& checks_;
  StepNames names_;
  std::vector<std::unique_ptr<SubmitSlot>> slots_;
  RecordedSteps recorded_;
  std::string recorded_name_;  // of the recorded steps waiting to be verified
  std::unique_ptr<vk::Profiler> profiler_;
  uint64_t steps_ = 0;    // submitted or recorded
  uint64_t counted_ = 0;  // of them, StepKind::counted
};

}  // namespace attendre::gpu
