// The public device stack: a handle on one StackEngine.
#include "gpu/stack_engine.hpp"

#include "core/try.hpp"

#include <attendre/gpu_stack.hpp>

namespace attendre::gpu {

Result<std::unique_ptr<Stack>> Stack::create(Context& context, const StackConfig& config, WeightSource& weights) {
  ATTENDRE_TRY_ASSIGN(std::unique_ptr<StackEngine> engine, StackEngine::create(context, config, weights));
  return std::unique_ptr<Stack>(new Stack(std::move(engine)));
}
Stack::Stack(std::unique_ptr<StackEngine>&& engine) : engine_(std::move(engine)) {}
Stack::~Stack() = default;

const StackConfig& Stack::config() const { return engine_->config(); }
Result<StackOutput> Stack::step(const StackChunk& chunk, const StackRequest& request) {
  return engine_->step(chunk, request);
}
Result<StackOutput> Stack::decode(const StackChunk& one, const StackRequest& request) {
  return engine_->decode(one, request);
}
bool Stack::has_pending() const { return engine_->has_pending(); }
Result<MemorySnapshot> Stack::snapshot(size_t block) { return engine_->snapshot(block); }
Result<StackOutput> Stack::drain_step(const StackRequest& request) { return engine_->drain_step(request); }
Result<StackOutput> Stack::flush_block(size_t block, const StackRequest& request) {
  return engine_->flush_block(block, request);
}
void Stack::mark_finished() { engine_->mark_finished(); }
StackMemory Stack::memory() const { return engine_->memory(); }
Stack::Recorded Stack::last_recorded() const { return engine_->last_recorded(); }
Status Stack::set_profiling(bool enabled) { return engine_->set_profiling(enabled); }
Result<std::vector<KernelTime>> Stack::last_profile() { return engine_->last_profile(); }
Result<RecordedStep> Stack::record(VkCommandBuffer cb, const StackRecordInputs& in, const StackRecordOutputs& out) {
  return engine_->record(cb, in, out);
}
Result<RecordedStep> Stack::record_decode(VkCommandBuffer cb, const StackRecordInputs& in,
                                          const StackRecordOutputs& out) {
  return engine_->record_decode(cb, in, out);
}
Result<RecordedStep> Stack::record_flush(VkCommandBuffer cb, size_t block, const StackRecordOutputs& out) {
  return engine_->record_flush(cb, block, out);
}
Result<Ticket> Stack::submit(const StackChunk& chunk, const StackRequest& request, const SubmitOptions& options) {
  return engine_->submit(chunk, request, options);
}
Result<StackOutput> Stack::result(const Ticket& ticket) { return engine_->result(ticket); }
Status Stack::wait() { return engine_->wait(); }

}  // namespace attendre::gpu
