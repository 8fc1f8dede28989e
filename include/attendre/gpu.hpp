// The Vulkan implementation of the ATTENDRE layer. The Q and K/V memories
// live in device-resident buffers for the whole stream; one step is one
// command buffer with no host readback inside it, and the host reads back
// only what a StepRequest asks for.
#pragma once

#include <attendre/context.hpp>
#include <attendre/embedding.hpp>
#include <attendre/layer.hpp>
#include <attendre/status.hpp>

#include <memory>
#include <optional>

namespace attendre::gpu {

// One step recorded into an application's command buffer. Positions,
// valid flags and tags always come from the host (the host plans evictions
// from them, never reading anything back); q, k and v come from the chunk's
// spans, or all three from the application's buffers: rows * heads * head_dim
// floats each, row-major as in ChunkView.
struct LayerInputs {
  ChunkView chunk;
  std::optional<BufferRange> q, k, v;
};

// Where a recorded step's outputs go: the emitted rows o[q][h][d], packed in
// emission order (room for S rows); none: the step only advances the memories.
struct LayerOutputs {
  std::optional<BufferRange> outputs;
  Consumer consumer;  // who reads them after the step
};

struct RecordedStep {
  std::vector<int64_t> emitted_positions;  // one row each in LayerOutputs::outputs
};

// Errors as values (attendre/status.hpp): every fallible call (create() in
// place of a constructor) returns a Status or Result; value_or_throw() and
// or_throw() throw it where the application has exceptions. After a failure the object stays usable (a call that fails
// its checks changes nothing) or, after a device failure, cleanly
// destroyable.
class Layer final : public AttendreLayer {
 public:
  // Fails: invalid_argument / infeasible_config for the config,
  // unsupported when a size exceeds this device's limits.
  static Result<std::unique_ptr<Layer>> create(Context& context, const LayerConfig& config);
  ~Layer() override;
  Layer(const Layer&) = delete;
  Layer& operator=(const Layer&) = delete;

  const LayerConfig& config() const override;
  Result<StepResult> step(const ChunkView& chunk, const StepRequest& request = {}) override;
  Result<StepResult> drain_step(const StepRequest& request = {}) override;
  Result<StepResult> flush(const StepRequest& request = {}) override;
  bool has_pending_queries() const override;
  Result<MemorySnapshot> snapshot() override;

  // Blocks until every submitted step finished on the device (steps that
  // read nothing back return as soon as they are submitted).
  Status wait();

  // Embedding (docs/architecture.md, "Recording into an application's
  // command buffer"): appends one step to `cb`, which the application has
  // begun and will end and submit to the context's queue. The step is
  // committed here: the host's bookkeeping already counts it, so `cb` must
  // be submitted, once, before the next call on this layer, and steps run in
  // the order they were recorded. Contract of the recorded commands: first a
  // barrier from every stage's writes (ALL_COMMANDS, MEMORY_WRITE) to
  // compute and transfer, so the application's earlier writes of q, k, v
  // need no barrier of theirs; last a barrier from compute and transfer
  // writes to `out.consumer` and the host. Host inputs travel inside `cb`
  // (vkCmdUpdateBuffer). Non-finite values of recorded steps are reported
  // (numerical_error) by the next call that waits for the device. A call
  // that fails its checks records nothing.
  Result<RecordedStep> record(VkCommandBuffer cb, const LayerInputs& in, const LayerOutputs& out = {});

  // step() without blocking: uploads the chunk, submits, and returns. Two
  // steps may be in flight (double-buffered upload and readback), so the
  // host prepares step t+1 while the device runs step t; a third submit
  // waits for the first. Collect each with result(), in any order, before
  // the step after next is submitted; a snapshot or evicted entries must be
  // collected before the next submit. `options`: semaphores to wait for
  // first, and an application range for the outputs (then chain on the
  // ticket's semaphore, attendre/embedding.hpp).
  Result<Ticket> submit(const ChunkView& chunk, const StepRequest& request = {}, const SubmitOptions& options = {});
  // Waits for the ticket's step and returns what step() would have.
  Result<StepResult> result(const Ticket& ticket);

  // Timestamps around every dispatch of later steps (off by default: they
  // cost a little). last_profile() then lists the last step's kernels.
  // Switching waits for the steps in flight (a failure there changes
  // nothing); where the device has no timestamps, profiling stays off.
  Status set_profiling(bool enabled);
  Result<std::vector<KernelTime>> last_profile();

  // Device memory held by the layer (memories, scratch, staging); it does
  // not grow with the number of positions streamed.
  uint64_t device_bytes() const;
  // Queries retrieved per batch inside one step (scratch is sized for it).
  uint32_t queries_per_batch() const;

 private:
  struct Impl;
  explicit Layer(std::unique_ptr<Impl>&& impl);
  std::unique_ptr<Impl> impl_;
};

// The K/V memory alone on the device (paper Table 1): insert() keys and
// values, retrieve() with queries. The memory stays on the device between
// calls; each call is one submission and reads back what it returns.
// Errors as values as Layer.
class KeyValueMemory {
 public:
  // `max_insert` rows per insert(), `max_queries` per retrieve().
  static Result<std::unique_ptr<KeyValueMemory>> create(Context& context, const AttentionShape& shape,
                                                        const KvMemoryConfig& config, const RetrievalConfig& retrieval,
                                                        uint32_t max_insert, uint32_t max_queries);
  ~KeyValueMemory();
  KeyValueMemory(const KeyValueMemory&) = delete;
  KeyValueMemory& operator=(const KeyValueMemory&) = delete;

  // Spec 2.1 for the valid rows of `rows` (k, v, positions, valid, tags;
  // q unused). The evicted entries come back, sorted by position, when the
  // config copies them out.
  Result<EvictedEntries> insert(const ChunkView& rows);
  // Spec 2.2-2.4 for the valid rows of `queries` (q, positions, valid,
  // tags; k and v unused): o[query][head][dim] of each valid query, in
  // order, after which the policy scores are updated.
  Result<std::vector<float>> retrieve(const ChunkView& queries);
  Result<MemorySnapshot> snapshot();

  // Embedding: insert() and retrieve() appended to the application's `cb`,
  // with Layer::record's contract (committed here; `cb` submitted once, in
  // recording order, to the context's queue before the next call on this
  // memory; an acquire barrier first, a release barrier to `consumer` and
  // the host last; host inputs travel inside `cb`). Positions, valid flags
  // and tags come from the host; keys and values (rows * heads_kv *
  // head_dim floats each) or queries (rows * heads_q * head_dim) from the
  // chunk's spans or the application's ranges. A recorded insert copies no
  // evicted entries out. A recorded retrieve writes o[query][head][dim] of
  // each valid query, packed, into `outputs` (room for max_queries rows;
  // none: only the policy scores advance) and returns their positions.
  Status record_insert(VkCommandBuffer cb, const ChunkView& rows, const std::optional<BufferRange>& k,
                       const std::optional<BufferRange>& v, const Consumer& consumer = {});
  Result<RecordedStep> record_retrieve(VkCommandBuffer cb, const ChunkView& queries,
                                       const std::optional<BufferRange>& q, const LayerOutputs& out = {});

 private:
  struct Impl;
  explicit KeyValueMemory(std::unique_ptr<Impl>&& impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace attendre::gpu
