#include "gpu/step_executor.hpp"

#include "gpu/ticket.hpp"
#include "core/try.hpp"

#include <algorithm>
#include <limits>
#include <string>
#include <utility>

namespace attendre::gpu {

Result<std::unique_ptr<StepExecutor>> StepExecutor::create(Context& context, FiniteChecks& checks,
                                                           uint64_t upload_bytes, const char* upload_label,
                                                           uint64_t readback_bytes, const char* readback_label,
                                                           uint32_t slots, StepNames names) {
  ATTENDRE_REQUIRE(slots >= 1 && slots <= kSlots, "a step executor has 1 to " + std::to_string(kSlots) + " slots");
  std::unique_ptr<StepExecutor> executor(new StepExecutor(context, checks, names));
  for (uint32_t i = 0; i < slots; ++i) {
    ATTENDRE_TRY_ASSIGN(SubmitSlot made,
                        SubmitSlot::create(context, i, upload_bytes, upload_label, readback_bytes, readback_label));
    executor->slots_.push_back(std::make_unique<SubmitSlot>(std::move(made)));
  }
  return executor;
}

std::string StepExecutor::next_name(StepKind kind) {
  if (kind == StepKind::counted) return std::string(names_.counted) + " " + std::to_string(counted_++);
  return std::string(names_.uncounted) + " before " + names_.counted + " " + std::to_string(counted_);
}

Status StepExecutor::finish(SubmitSlot& slot) {
  ATTENDRE_TRY(slot.submission.wait());
  if (!slot.unverified) return {};
  slot.unverified = false;
  return checks_.verify(slot.name, slot.index);
}

Status StepExecutor::finish_recorded() {
  return recorded_.wait(slots_[0]->submission, checks_, recorded_checks(), recorded_name_);
}

Status StepExecutor::finish_through(uint64_t last) {
  // In submission order, so that a non-finite value is reported for the
  // first step that had one; the recorded steps share one set of flags,
  // reported in the place of the first of them.
  std::vector<SubmitSlot*> order;
  for (const auto& slot : slots_) order.push_back(slot.get());
  std::sort(order.begin(), order.end(), [](const SubmitSlot* a, const SubmitSlot* b) { return a->step < b->step; });
  for (SubmitSlot* slot : order) {
    if (!slot->unverified || slot->step > last) continue;
    if (recorded_.unverified() && recorded_.first_step() < slot->step) ATTENDRE_TRY(finish_recorded());
    ATTENDRE_TRY(finish(*slot));
  }
  if (recorded_.unverified() && recorded_.first_step() <= last) return finish_recorded();
  return {};
}

Status StepExecutor::finish_all() {
  ATTENDRE_TRY(finish_through(std::numeric_limits<uint64_t>::max()));
  for (const auto& slot : slots_) ATTENDRE_TRY(slot->submission.wait());
  return {};
}

Status StepExecutor::ready() {
  if (profiler_) return finish_all();  // profiles are per step: one in flight
  SubmitSlot& slot = *slots_[steps_ % slots_.size()];
  if (slot.unverified) ATTENDRE_TRY(finish_through(slot.step));
  return slot.submission.wait();  // its previous step is done: its upload and readback are free
}

Result<SubmitSlot*> StepExecutor::begin() {
  ATTENDRE_TRY(ready());
  SubmitSlot& slot = *slots_[steps_ % slots_.size()];
  checks_.use_slot(slot.index);
  ATTENDRE_TRY_ASSIGN(vk::CommandRecorder* const rec, slot.submission.begin());
  rec->attach(profiler_.get());
  return &slot;
}

Result<Ticket> StepExecutor::submit(SubmitSlot& slot, std::span<const SemaphoreWait> waits, StepKind kind) {
  ATTENDRE_TRY(slot.submission.submit(waits));
  slot.name = next_name(kind);
  slot.step = steps_++;
  slot.unverified = true;
  slot.uncollected = true;
  return TicketAccess::make(slot.submission, slot.step);
}

Result<SubmitSlot*> StepExecutor::collect(const Ticket& ticket) {
  SubmitSlot& slot = *slots_[ticket.step() % slots_.size()];
  ATTENDRE_TRY(TicketAccess::check_collectable(ticket, slot.submission, slot.step, slot.uncollected));
  slot.uncollected = false;
  return &slot;
}

vk::CommandRecorder StepExecutor::begin_recorded(VkCommandBuffer cb) {
  return RecordedSteps::begin(context_, cb, checks_, recorded_checks());
}

void StepExecutor::end_recorded(vk::CommandRecorder& rec, const Consumer& consumer, StepKind kind) {
  recorded_.end(rec, consumer, steps_++);
  if (kind == StepKind::counted) ++counted_;
  // Named by the counted step after the last of them.
  recorded_name_ = std::string(names_.recorded) + " before " + names_.counted + " " + std::to_string(counted_);
}

Status StepExecutor::set_profiling(bool enabled) {
  ATTENDRE_TRY(finish_all());  // no step in flight writes the old profiler's timestamps
  profiler_.reset();
  if (!enabled) return {};
  ATTENDRE_TRY_ASSIGN(vk::Profiler profiler, vk::Profiler::create(context_, kProfileTimestamps));
  profiler_ = std::make_unique<vk::Profiler>(std::move(profiler));
  return {};
}

Result<std::vector<KernelTime>> StepExecutor::last_profile() {
  ATTENDRE_TRY(finish_all());
  std::vector<KernelTime> out;
  if (!profiler_) return out;
  ATTENDRE_TRY_ASSIGN(const std::vector<vk::Profiler::Sample> samples, profiler_->read());
  for (const auto& s : samples) out.push_back({s.label, s.ns, s.pieces, s.longest_piece_ns});
  return out;
}

uint64_t StepExecutor::staging_bytes() const {
  uint64_t bytes = 0;
  for (const auto& slot : slots_) bytes += slot->upload.size() + slot->readback.size();
  return bytes;
}

}  // namespace attendre::gpu
