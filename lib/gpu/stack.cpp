// The public device stack: a handle on one StackEngine.
#include "gpu/stack_engine.hpp"

#include <attendre/gpu_stack.hpp>

namespace attendre::gpu {

Stack::Stack(Context& context, const StackConfig& config, WeightSource& weights)
    : engine_(std::make_unique<StackEngine>(context, config, weights)) {}
Stack::~Stack() = default;

const StackConfig& Stack::config() const { return engine_->config(); }
Result<StackOutput> Stack::try_step(const StackChunk& chunk, const StackRequest& request) {
  return engine_->try_step(chunk, request);
}
Result<StackOutput> Stack::try_decode(const StackChunk& one, const StackRequest& request) {
  return engine_->try_decode(one, request);
}
bool Stack::has_pending() const { return engine_->has_pending(); }
Result<MemorySnapshot> Stack::try_snapshot(size_t block) { return engine_->try_snapshot(block); }
Result<StackOutput> Stack::try_drain_step(const StackRequest& request) { return engine_->try_drain_step(request); }
Result<StackOutput> Stack::try_flush_block(size_t block, const StackRequest& request) {
  return engine_->try_flush_block(block, request);
}
void Stack::mark_finished() { engine_->mark_finished(); }
StackMemory Stack::memory() const { return engine_->memory(); }
Stack::Recorded Stack::last_recorded() const { return engine_->last_recorded(); }
void Stack::set_profiling(bool enabled) { engine_->set_profiling(enabled); }
std::vector<KernelTime> Stack::last_profile() { return engine_->last_profile(); }
RecordedStep Stack::record(VkCommandBuffer cb, const StackRecordInputs& in, const StackRecordOutputs& out) {
  return engine_->record(cb, in, out);
}
RecordedStep Stack::record_decode(VkCommandBuffer cb, const StackRecordInputs& in, const StackRecordOutputs& out) {
  return engine_->record_decode(cb, in, out);
}
RecordedStep Stack::record_flush(VkCommandBuffer cb, size_t block, const StackRecordOutputs& out) {
  return engine_->record_flush(cb, block, out);
}
Ticket Stack::submit(const StackChunk& chunk, const StackRequest& request, const SubmitOptions& options) {
  return engine_->submit(chunk, request, options);
}
StackOutput Stack::result(const Ticket& ticket) { return engine_->result(ticket); }
void Stack::wait() { engine_->wait(); }

}  // namespace attendre::gpu
