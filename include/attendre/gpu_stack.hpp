// The streaming stack on the device. Every block's Q and K/V memories and
// weights stay in device buffers; one call of step(), finish()'s inner steps
// or decode() records the whole stack into one command buffer, submitted
// once, and the host only uploads the chunk and reads back the outputs.
#pragma once

#include <attendre/context.hpp>
#include <attendre/gpu.hpp>
#include <attendre/stack.hpp>

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace attendre::gpu {

class StackEngine;
struct StackAccess;

// One stack step recorded into an application's command buffer. Positions
// and valid flags always come from the host (every block plans its
// evictions from them); the input rows come from the chunk's tokens or
// embeddings, or from the application's buffer: chunk.rows uint32 token ids
// (`tokens`, when the stack has a vocabulary) or chunk.rows * hidden floats
// (`embeddings`, when it has none). A chunk of no rows is a drain step.
struct StackRecordInputs {
  StackChunk chunk;
  std::optional<BufferRange> tokens, embeddings;
};

// Where a recorded step's outputs go, one row per emitted position, packed
// in emission order (room for config.chunk rows: a step emits at most as
// many rows as it takes in): the final hidden rows (hidden floats each, after
// the final norm) and the logits (vocab floats each); none: the step only
// advances the memories.
struct StackRecordOutputs {
  std::optional<BufferRange> hidden, logits;
  Consumer consumer;  // who reads them after the step
};

// Device bytes held for one block. None of it grows with the stream.
struct BlockMemory {
  uint64_t weights = 0;    // projections, FFN, norms
  uint64_t q_memory = 0;   // the Q ring: queries and the residual rows waiting with them
  uint64_t kv_memory = 0;  // keys, values, positions, scores, and the insertion chunk
  uint64_t total() const { return weights + q_memory + kv_memory; }
};

// Bytes a stack holds on the device, as allocated (every buffer rounded to
// 256 bytes, weights placed in one arena).
struct StackMemory {
  std::vector<BlockMemory> blocks;
  uint64_t model = 0;        // token embeddings, final norm, LM head
  uint64_t scratch = 0;      // retrieval scratch, shared by the blocks
  uint64_t activations = 0;  // hidden rows, FFN intermediates, logits, shared by the blocks
  uint64_t staging = 0;      // host-visible upload and readback of every step
  uint64_t total() const;
  // Host-visible staging held while the weights load, on top of total()
  // (0 on unified memory, where weights are written in place).
  uint64_t load_staging = 0;
};

// What a stack of this configuration holds on this device, without
// creating it (for sizing a model before loading it): weights in the
// encodings `weights` holds them in (type_of(), which reads no data), or
// in config.weights without a source. Fails for the config's own problems,
// a tensor the source lacks or cannot describe, or a row past the storage range.
Result<StackMemory> plan_stack_memory(const StackConfig& config, const DeviceCaps& caps);
Result<StackMemory> plan_stack_memory(const StackConfig& config, const DeviceCaps& caps, WeightSource& weights);

// One buffer a stack creates: its bytes as allocated, or as placed in the
// weight arena. Each is bound whole or in sections of it, so one within the
// storage range is within it in every binding; host staging is only copied.
struct PlannedBuffer {
  std::string name;      // the tensor ("blk.3.ffn_down.weight", "part i" when split by rows) or the buffer
  uint64_t bytes = 0;
  bool weights = false;  // placed in the weight arena; else an allocation of its own
  bool bound = true;     // bound to shaders; false: host staging, copied to and from only
  std::string remedy;    // what makes it smaller, for check's message ("" for weights: split)

  // A failure with `code` naming this buffer and what makes it smaller:
  // "'<name>' <problem>; <remedy>" (check's words, also a layout's
  // that passes 2^32 words).
  Status refused(ErrorCode code, const std::string& problem) const;
};

// Every buffer and allocation of a stack, planned without allocating (the
// totals are plan_stack_memory's), for checking a layout against a device's
// limits before loading anything.
struct StackLayout {
  std::vector<PlannedBuffer> buffers;        // weights in loading order, then the rest
  std::vector<uint64_t> weight_allocations;  // the weight arena's vkAllocateMemory sizes
  StackMemory memory;
  // Fails (unsupported) naming the first buffer bound to shaders whose
  // bytes pass caps.max_storage_range, or any whose allocation passes
  // caps.max_allocation. gpu::Stack::create checks this first.
  Status check(const DeviceCaps& caps) const;
};
// Fails as plan_stack_memory.
Result<StackLayout> plan_stack_layout(const StackConfig& config, const DeviceCaps& caps);
Result<StackLayout> plan_stack_layout(const StackConfig& config, const DeviceCaps& caps, WeightSource& weights);

// Errors as values as gpu::Layer (attendre/gpu.hpp): create() in place of
// a constructor, a Status or Result from every call that can fail.
class Stack final : public TransformerStack {
 public:
  // Fails: the config's own problems, unsupported for sizes past the
  // device's limits or fp16 weights without 16-bit storage, and whatever
  // the weight source reports (its own code and message).
  static Result<std::unique_ptr<Stack>> create(Context& context, const StackConfig& config, WeightSource& weights);
  ~Stack() override;
  Stack(const Stack&) = delete;
  Stack& operator=(const Stack&) = delete;

  const StackConfig& config() const override;
  Result<StackOutput> step(const StackChunk& chunk, const StackRequest& request = {}) override;
  Result<StackOutput> decode(const StackChunk& one, const StackRequest& request = {}) override;
  bool has_pending() const override;
  Result<MemorySnapshot> snapshot(size_t block) override;

  // Device memory actually allocated, laid out as plan_stack_memory().
  StackMemory memory() const;
  // Dispatches, barriers and transfers recorded by the last submission,
  // the host's milliseconds planning, recording and submitting it, and
  // those waiting for it to finish (0 for a submission not waited on yet).
  struct Recorded {
    uint32_t submits = 0, dispatches = 0, barriers = 0, copies = 0;
    double host_ms = 0.0, wait_ms = 0.0;
  };
  Recorded last_recorded() const;
  // Timestamps around every dispatch of later submissions; last_profile()
  // lists the last one's kernels in order. Switching waits for the steps in
  // flight (a failure there changes nothing);
  // where the device has no timestamps, profiling stays off.
  Status set_profiling(bool enabled);
  Result<std::vector<KernelTime>> last_profile();

  // Embedding: appends one step (embedding, every block, final norm, LM
  // head) to `cb`, with the contract of Layer::record (attendre/gpu.hpp):
  // committed here, so `cb` is submitted once, in recording order, before
  // the next call on this stack; first an acquire barrier from every
  // stage's writes, last a release barrier to `out.consumer` and the host;
  // host inputs travel inside `cb`. Returns the positions the step emitted.
  // A call that fails its checks records nothing.
  Result<RecordedStep> record(VkCommandBuffer cb, const StackRecordInputs& in, const StackRecordOutputs& out = {});
  // decode() recorded (after finish(): drain with record() of chunks of no
  // rows, or flush with record_flush(), until has_pending() is false, then
  // call finish(), which has nothing left to run): one position in `in`.
  Result<RecordedStep> record_decode(VkCommandBuffer cb, const StackRecordInputs& in,
                                     const StackRecordOutputs& out = {});
  // One of finish(flush)'s steps recorded: every query waiting in block
  // `block`'s Q memory retrieves at once and goes on through the blocks
  // after it. Its outputs may hold more rows than a chunk: room for the
  // most rows any block passes on (the largest of S and the blocks' N).
  Result<RecordedStep> record_flush(VkCommandBuffer cb, size_t block, const StackRecordOutputs& out = {});

  // step() without blocking, as gpu::Layer::submit: two steps in flight
  // (double-buffered upload and readback), each collected once with
  // result() before the step after next; `options` as there (its outputs
  // receive the final hidden rows, packed). A snapshot needs every result
  // that reads something back collected first.
  Result<Ticket> submit(const StackChunk& chunk, const StackRequest& request = {}, const SubmitOptions& options = {});
  Result<StackOutput> result(const Ticket& ticket);
  // Blocks until every submitted or recorded step finished, and reports
  // their non-finite values.
  Status wait();

 protected:
  Result<StackOutput> drain_step(const StackRequest& request) override;
  Result<StackOutput> flush_block(size_t block, const StackRequest& request) override;
  void mark_finished() override;

 private:
  friend struct StackAccess;  // the library's encoder-decoder
  explicit Stack(std::unique_ptr<StackEngine>&& engine);
  std::unique_ptr<StackEngine> engine_;
};

}  // namespace attendre::gpu
