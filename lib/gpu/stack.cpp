// The public device stack, the one implementation of TransformerStack on
// the device: its methods check what the public contract asks (the phase
// of the stream, the chunk, the ranges) and run the step on its engine
// (gpu/stack_engine.hpp), which plans, records and submits it. The
// encoder-decoder's two stacks are gpu::Stacks too (StackAccess).
#include "gpu/stack_engine.hpp"

#include "core/try.hpp"

#include <attendre/gpu_stack.hpp>

#include <string>

namespace attendre::gpu {
Result<std::unique_ptr<Stack>> Stack::create(Context& context, const StackConfig& config, WeightSource& weights) {
  ATTENDRE_TRY_ASSIGN(std::unique_ptr<StackEngine> engine, StackEngine::create(context, config, weights));
  return StackAccess::wrap(std::move(engine));
}
Stack::Stack(std::unique_ptr<StackEngine>&& engine) : engine_(std::move(engine)) {}
Stack::~Stack() = default;

const StackConfig& Stack::config() const { return engine_->config_; }
StackMemory Stack::memory() const { return engine_->memory(); }
Stack::Recorded Stack::last_recorded() const { return engine_->recorded_; }
Status Stack::set_profiling(bool enabled) { return engine_->executor_->set_profiling(enabled); }
Result<std::vector<KernelTime>> Stack::last_profile() { return engine_->executor_->last_profile(); }
Status Stack::wait() { return engine_->executor_->finish_all(); }
void Stack::mark_finished() { engine_->finished_ = true; }

bool Stack::has_pending() const {
  for (const auto& b : engine_->blocks_)
    if (b->has_pending()) return true;
  return false;
}

Result<StackOutput> Stack::step(const StackChunk& chunk, const StackRequest& request) {
  ATTENDRE_TRY(engine_->executor_->finish_all());  // blocking steps report an earlier step's non-finite values first
  ATTENDRE_TRY_ASSIGN(const Ticket ticket, submit(chunk, request, {}));
  return result(ticket);
}

Result<Ticket> Stack::submit(const StackChunk& chunk, const StackRequest& request, const SubmitOptions& options) {
  StackEngine& e = *engine_;
  const StackConfig& c = e.config_;
  ATTENDRE_REQUIRE(!e.finished_, "step() after finish(): use decode()");
  ATTENDRE_REQUIRE(!request.logits || c.vocab > 0, "logits requested from a stack without a vocabulary");
  ATTENDRE_TRY(e.executor_->check_waits(options.waits));
  if (options.outputs) ATTENDRE_TRY(check_range(*options.outputs, uint64_t{c.chunk} * c.hidden * 4, "outputs"));
  ATTENDRE_TRY(e.validator_.check(chunk, c, c.chunk));
  ATTENDRE_TRY(check_gpu_positions(chunk));
  ATTENDRE_TRY_ASSIGN(Ticket ticket, e.submit_step(&chunk, 0, BlockMode::stream, request, options));
  e.validator_.accept(chunk);
  return ticket;
}

Result<StackOutput> Stack::result(const Ticket& ticket) { return engine_->collect(ticket); }

Result<StackOutput> Stack::drain_step(const StackRequest& request) {
  return engine_->run(nullptr, 0, BlockMode::stream, request);
}

Result<StackOutput> Stack::flush_block(size_t block, const StackRequest& request) {
  return engine_->run(nullptr, block, BlockMode::flush, request);
}

Result<StackOutput> Stack::decode(const StackChunk& one, const StackRequest& request) {
  StackEngine& e = *engine_;
  ATTENDRE_REQUIRE(e.finished_, "decode() before finish(): drain the stack first");
  ATTENDRE_TRY(e.validator_.check(one, e.config_, 1));
  ATTENDRE_REQUIRE(one.rows == 1, "decode() takes exactly one position");
  ATTENDRE_TRY(check_gpu_positions(one));
  ATTENDRE_TRY_ASSIGN(StackOutput out, e.run(&one, 0, BlockMode::decode, request));
  e.validator_.accept(one);
  return out;
}

Result<MemorySnapshot> Stack::snapshot(size_t block) {
  StackEngine& e = *engine_;
  ATTENDRE_REQUIRE(block < e.blocks_.size(), "no block " + std::to_string(block));
  ATTENDRE_TRY(e.executor_->finish_all());
  // Slot 0's readback serves the snapshot: a result still to collect there would be overwritten.
  SubmitSlot& slot = e.executor_->slot(0);
  ATTENDRE_REQUIRE(!(slot.uncollected && (e.reads_[0].request.hidden || e.reads_[0].request.logits)),
                   "collect the submitted steps' results before a snapshot");
  return e.blocks_[block]->kv().read_snapshot(slot.submission, slot.readback, 0);
}

Result<RecordedStep> Stack::record(VkCommandBuffer cb, const StackRecordInputs& in, const StackRecordOutputs& out) {
  ATTENDRE_REQUIRE(!engine_->finished_, "record() after finish(): the stack decodes now (record_decode)");
  return engine_->record_step_into(cb, in, out, 0, BlockMode::stream);
}

Result<RecordedStep> Stack::record_decode(VkCommandBuffer cb, const StackRecordInputs& in,
                                              const StackRecordOutputs& out) {
  ATTENDRE_REQUIRE(engine_->finished_, "record_decode() before finish(): drain or flush the stack first");
  ATTENDRE_REQUIRE(in.chunk.rows == 1, "record_decode() takes exactly one position");
  return engine_->record_step_into(cb, in, out, 0, BlockMode::decode);
}

Result<RecordedStep> Stack::record_flush(VkCommandBuffer cb, size_t block, const StackRecordOutputs& out) {
  ATTENDRE_REQUIRE(!engine_->finished_, "record_flush() after finish(): the stack decodes now");
  ATTENDRE_REQUIRE(block < engine_->blocks_.size(), "record_flush(): no block " + std::to_string(block));
  return engine_->record_step_into(cb, {}, out, block, BlockMode::flush);
}

}  // namespace attendre::gpu
