// The Vulkan implementation of the ATTENDRE layer. The Q and K/V memories
// live in device-resident buffers for the whole stream; one step is one
// command buffer with no host readback inside it, and the host reads back
// only what a StepRequest asks for.
#pragma once

#include <attendre/context.hpp>
#include <attendre/layer.hpp>

#include <memory>

namespace attendre::gpu {

class Layer final : public AttendreLayer {
 public:
  // Throws Error: invalid_argument / infeasible_config for the config,
  // unsupported when a size exceeds this device's limits.
  Layer(Context& context, const LayerConfig& config);
  ~Layer() override;
  Layer(const Layer&) = delete;
  Layer& operator=(const Layer&) = delete;

  const LayerConfig& config() const override;
  StepResult step(const ChunkView& chunk, const StepRequest& request = {}) override;
  StepResult drain_step(const StepRequest& request = {}) override;
  StepResult flush(const StepRequest& request = {}) override;
  bool has_pending_queries() const override;
  MemorySnapshot snapshot() override;

  // Blocks until every submitted step finished on the device (steps that
  // read nothing back return as soon as they are submitted).
  void wait();

  // Timestamps around every dispatch of later steps (off by default: they
  // cost a little). last_profile() then lists the last step's kernels.
  void set_profiling(bool enabled);
  std::vector<KernelTime> last_profile();

  // Device memory held by the layer (memories, scratch, staging); it does
  // not grow with the number of positions streamed.
  uint64_t device_bytes() const;
  // Queries retrieved per batch inside one step (scratch is sized for it).
  uint32_t queries_per_batch() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The K/V memory alone on the device (paper Table 1): insert() keys and
// values, retrieve() with queries. The memory stays on the device between
// calls; each call is one submission and reads back what it returns.
class KeyValueMemory {
 public:
  // `max_insert` rows per insert(), `max_queries` per retrieve().
  KeyValueMemory(Context& context, const AttentionShape& shape, const KvMemoryConfig& config,
                 const RetrievalConfig& retrieval, uint32_t max_insert, uint32_t max_queries);
  ~KeyValueMemory();
  KeyValueMemory(const KeyValueMemory&) = delete;
  KeyValueMemory& operator=(const KeyValueMemory&) = delete;

  // Spec 2.1 for the valid rows of `rows` (k, v, positions, valid, tags;
  // q unused). The evicted entries come back, sorted by position, when the
  // config copies them out.
  EvictedEntries insert(const ChunkView& rows);
  // Spec 2.2-2.4 for the valid rows of `queries` (q, positions, valid,
  // tags; k and v unused): o[query][head][dim] of each valid query, in
  // order, after which the policy scores are updated.
  std::vector<float> retrieve(const ChunkView& queries);
  MemorySnapshot snapshot();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace attendre::gpu
