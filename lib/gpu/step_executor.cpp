#include "gpu/step_executor.hpp"

#include "gpu/ticket.hpp"
#include "core/try.hpp"

#include <string>
#include <utility>

namespace attendre::gpu {

Result<std::unique_ptr<StepExecutor>> StepExecutor::create(Context& context, FiniteChecks& checks,
                                                           uint64_t upload_bytes, const char* upload_label,
                                                           uint64_t readback_bytes, const char* readback_label) {
  std::unique_ptr<StepExecutor> executor(new StepExecutor(context, checks));
  for (uint32_t i = 0; i < kSlots; ++i) {
    ATTENDRE_TRY_ASSIGN(SubmitSlot made,
                        SubmitSlot::create(context, i, upload_bytes, upload_label, readback_bytes, readback_label));
    executor->slots_[i] = std::make_unique<SubmitSlot>(std::move(made));
  }
  return executor;
}

Status StepExecutor::try_finish(SubmitSlot& slot) {
  ATTENDRE_TRY(slot.submission.try_wait());
  if (!slot.unverified) return {};
  slot.unverified = false;
  return checks_.verify("step " + std::to_string(slot.step), slot.index);
}

Status StepExecutor::try_finish_recorded() {
  return recorded_.wait(slots_[0]->submission, checks_, kRecordedChecks,
                        "a recorded step before step " + std::to_string(steps_));
}

Status StepExecutor::try_finish_all() {
  // In submission order, so that a non-finite value is reported for the
  // first step that had one; the recorded steps share one set of flags,
  // reported in the place of the first of them.
  SubmitSlot* older = slots_[0].get();
  SubmitSlot* newer = slots_[1].get();
  if (older->step > newer->step) std::swap(older, newer);
  bool recorded_read = !recorded_.unverified();
  for (SubmitSlot* slot : {older, newer}) {
    if (!recorded_read && slot->unverified && recorded_.first_step() < slot->step) {
      ATTENDRE_TRY(try_finish_recorded());
      recorded_read = true;
    }
    ATTENDRE_TRY(try_finish(*slot));
  }
  if (!recorded_read) return try_finish_recorded();
  return {};
}

Result<SubmitSlot*> StepExecutor::try_begin() {
  if (profiler_) ATTENDRE_TRY(try_finish_all());  // profiles are per step: one in flight
  SubmitSlot& slot = *slots_[steps_ % kSlots];
  ATTENDRE_TRY(try_finish(slot));  // its previous step is done: its upload and readback are free
  checks_.use_slot(slot.index);
  ATTENDRE_TRY_ASSIGN(vk::CommandRecorder* const rec, slot.submission.try_begin());
  rec->attach(profiler_.get());
  return &slot;
}

Result<Ticket> StepExecutor::try_submit(SubmitSlot& slot, std::span<const SemaphoreWait> waits) {
  ATTENDRE_TRY(slot.submission.try_submit(waits));
  slot.step = steps_++;
  slot.unverified = true;
  slot.uncollected = true;
  return TicketAccess::make(slot.submission, slot.step);
}

Result<SubmitSlot*> StepExecutor::try_collect(const Ticket& ticket) {
  SubmitSlot& slot = *slots_[ticket.step() % kSlots];
  ATTENDRE_TRY(TicketAccess::check_collectable(ticket, slot.submission, slot.step, slot.uncollected));
  slot.uncollected = false;
  return &slot;
}

vk::CommandRecorder StepExecutor::begin_recorded(VkCommandBuffer cb) {
  return RecordedSteps::begin(context_, cb, checks_, kRecordedChecks);
}

void StepExecutor::end_recorded(vk::CommandRecorder& rec, const Consumer& consumer) {
  recorded_.end(rec, consumer, steps_++);
}

Status StepExecutor::try_set_profiling(bool enabled) {
  ATTENDRE_TRY(try_finish_all());  // no step in flight writes the old profiler's timestamps
  profiler_.reset();
  if (!enabled) return {};
  ATTENDRE_TRY_ASSIGN(vk::Profiler profiler, vk::Profiler::create(context_, kProfileTimestamps));
  profiler_ = std::make_unique<vk::Profiler>(std::move(profiler));
  return {};
}

Result<std::vector<KernelTime>> StepExecutor::try_last_profile() {
  ATTENDRE_TRY(try_finish_all());
  std::vector<KernelTime> out;
  if (!profiler_) return out;
  ATTENDRE_TRY_ASSIGN(const std::vector<vk::Profiler::Sample> samples, profiler_->try_read());
  for (const auto& s : samples) out.push_back({s.label, s.ns, s.pieces, s.longest_piece_ns});
  return out;
}

uint64_t StepExecutor::staging_bytes() const {
  uint64_t bytes = 0;
  for (const auto& slot : slots_) bytes += slot->upload.size() + slot->readback.size();
  return bytes;
}

}  // namespace attendre::gpu
