// gpu::KvRecorder: the K/V memory's device state (spec 2: keys, values,
// positions and scores in one device-resident buffer) and the recording of
// the kernels that insert into it and retrieve from it. It only records
// work into its owner's command buffer: the owner (gpu::Layer, a stack
// block, the public gpu::KeyValueMemory) submits. The host keeps what it
// can know without reading back (how many slots are held, how many are
// pinned), which is enough to size every dispatch.
#pragma once

#include "gpu/finite_checks.hpp"
#include "gpu/layouts.hpp"
#include "gpu/retrieval_scratch.hpp"
#include "interface/constants.h"
#include "kernels/flash.hpp"
#include "kernels/insert.hpp"
#include "kernels/kernel_plan.hpp"
#include "kernels/retrieve.hpp"
#include "vulkan/buffer.hpp"

#include <attendre/config.hpp>
#include <attendre/layer.hpp>
#include <attendre/stack.hpp>

#include <deque>
#include <memory>
#include <span>

namespace attendre::gpu {

// The step's evicted queries, as rows of the Q ring.
struct QueryRange {
  uint32_t ring_first = 0;             // unwrapped ring index of the first query
  uint32_t count = 0;                  // queries, valid or not
  uint32_t last_valid = kernels::kInvalid;  // index of the last valid query, or none
  int64_t last_valid_position = 0;
};

class KvRecorder {
 public:
  // `ring` holds the queries that retrieve; `max_queries` bounds one step's;
  // `max_insert` bounds the rows of one insertion (S, or more for a stack's
  // flush). `scratch` is shared with other memories, or null to own one.
  // Retrieval checks its outputs and scores for NaN and infinity at two sites
  // of `checks`, named after `stage` ("attention outputs of block 2").
  // `lm_infinite` (a stack's RoPE block): the ring holds kLmQueryVariants
  // rotations of each query, and the chunk rows come with kLmKeyVariants of
  // each key (interface/score.h); pairs farther apart than n_local are
  // scored at the cap. A T5 bias needs config.retrieval.t5.table, which is
  // uploaded here.
  // Fails for the config, sizes past the device's limits, or a buffer or
  // kernel the device refuses; nothing is left behind.
  static Result<std::unique_ptr<KvRecorder>> create(Context& context, const LayerConfig& config, uint32_t max_queries,
                                                  uint32_t max_insert, const vk::Buffer& ring,
                                                  const RingLayout& ring_layout, FiniteChecks& checks,
                                                  const std::string& stage, RetrievalScratch* scratch = nullptr,
                                                  const LmInfinite& lm_infinite = {});

  // Key variants a memory keeps per slot (kLmKeyVariants under LM-Infinite).
  static uint32_t key_variants(const LmInfinite& lm_infinite);

  // The scratch this memory needs, for sizing a shared RetrievalScratch.
  static Result<RetrievalPlan> plan(const Context& context, const LayerConfig& config, uint32_t max_queries);

  // The number of evictions inserting these rows needs; fails with
  // infeasible_config if they cannot happen (spec 2.1). Changes nothing.
  Result<uint32_t> plan_insert(std::span<const uint8_t> valid, std::span<const int64_t> positions) const;
  // Records spec 2.1 for the chunk rows already in chunk_buffer(): valid
  // flags and positions are the host's copy of those rows. Fails with
  // infeasible_config (recording nothing) if the eviction cannot happen.
  Status record_insert(vk::CommandRecorder& recorder, std::span<const uint8_t> valid,
                       std::span<const int64_t> positions);
  // Records spec 2.2-2.4 for the queries in `range`; outputs land in
  // attention_buffer() at outputs_offset(), row i for query i of the range.
  // `force_causal` masks future keys whatever the config (decoding).
  Status record_retrieve(vk::CommandRecorder& recorder, const QueryRange& range, bool force_causal = false);
  // The finite-check site of the attention outputs (range.count * q_row
  // floats from word 0 of its binding after record_retrieve). After
  // defer_outputs_check(), record_retrieve leaves that check to the caller,
  // who pairs it with a later one (a stack block's output rows).
  uint32_t outputs_site() const { return outputs_site_; }
  void defer_outputs_check() { defer_outputs_check_ = true; }
  // Records copies of positions and scores of the held slots into
  // `readback` at `offset` (2 * held words).
  void record_snapshot(vk::CommandRecorder& recorder, const vk::Buffer& readback, VkDeviceSize offset) const;
  // Reads what record_snapshot copied, sorted by position.
  MemorySnapshot decode_snapshot(const void* words) const;
  // Both in one submission of its own, waited for: a snapshot between steps.
  Result<MemorySnapshot> read_snapshot(vk::Submission& submission, const vk::Buffer& readback, uint64_t offset_words) const;
  // Evicted entries of the last insertion (copy_out_evicted only, else
  // invalid_argument).
  Status record_evicted(vk::CommandRecorder& recorder, const vk::Buffer& readback, VkDeviceSize offset) const;
  EvictedEntries decode_evicted(const void* words) const;

  // Forgets every entry (a cross-attention memory before it is reloaded).
  void reset();

  uint32_t held() const { return held_; }
  uint32_t last_evictions() const { return last_evictions_; }
  const vk::Buffer& chunk_buffer() const { return chunk_; }
  const ChunkLayout& chunk_layout() const { return chunk_layout_; }
  const vk::Buffer& kv_buffer() const { return kv_; }
  const KvLayout& kv_layout() const { return kv_layout_; }
  const vk::Buffer& attention_buffer() const { return scratch_->attention(); }
  uint64_t outputs_offset() const { return 0; }
  uint32_t queries_per_batch() const { return plan_.batch; }
  // Device bytes held by this memory, with its scratch if it owns it.
  uint64_t device_bytes() const;
  uint64_t evicted_words() const { return evicted_layout_.words; }
  uint64_t snapshot_words() const { return 2ull * config_.kv.capacity; }

 private:
  KvRecorder(const LayerConfig& config, const LmInfinite& lm_infinite, const kernels::KernelPlan& kernels,
           const RingLayout& ring_layout, FiniteChecks& checks)
      : config_(config), lm_infinite_(lm_infinite), kernels_(kernels), ring_layout_(ring_layout), checks_(checks) {}
  // What an insertion's valid rows are: how many, pinned, in the recent
  // window (unpinned), and the held unpinned entries the window covers.
  struct Fresh {
    uint32_t rows = 0, pinned = 0, recent = 0, held_recent = 0;
    uint32_t span = 0;  // chunk rows up to the last valid one (insert_scatter's rows)
    int64_t newest = 0;  // the newest valid position (rows > 0)
  };
  Fresh count_fresh(std::span<const uint8_t> valid, std::span<const int64_t> positions) const;
  Result<uint32_t> plan_insert(const Fresh& fresh) const;
  void note_inserted(std::span<const uint8_t> valid, std::span<const int64_t> positions, const Fresh& fresh);
  kernels::InsertConstants insert_constants() const;
  // Writes the T5 bucket and bias tables into their K/V buffer sections.
  Status upload_t5_tables(Context& context);
  Status retrieve_batch(vk::CommandRecorder& recorder, const QueryRange& range, uint32_t first, uint32_t count,
                      int32_t i_max, int32_t i_prev, bool causal);
  template <class Params>
  void scoring_fields(Params& params, uint32_t ring_first, uint32_t count, bool causal) const;
  // RetrievalPlan::flash: the batch's outputs in one pass, nothing else to update.
  Status flash_batch(vk::CommandRecorder& recorder, const QueryRange& range, uint32_t first, uint32_t count,
                     bool causal);

  LayerConfig config_;
  LmInfinite lm_infinite_;
  kernels::KernelPlan kernels_;
  RetrievalPlan plan_;
  RingLayout ring_layout_;
  KvLayout kv_layout_;
  ChunkLayout chunk_layout_;
  EvictedLayout evicted_layout_;

  vk::Buffer kv_, chunk_, evicted_;
  std::unique_ptr<RetrievalScratch> own_scratch_;
  RetrievalScratch* scratch_ = nullptr;
  std::unique_ptr<vk::DescriptorArena> arena_;
  kernels::InsertKernels insert_;
  kernels::RetrieveKernels retrieve_;
  kernels::FlashAttention flash_;  // RetrievalPlan::flash only
  FiniteChecks& checks_;
  uint32_t outputs_site_ = 0, scores_site_ = 0;
  bool defer_outputs_check_ = false;

  uint32_t held_ = 0;
  uint32_t pinned_ = 0;
  // KvMemoryConfig::n_recent > 0: the held unpinned positions the recent
  // window may still cover, ascending (at most W).
  std::deque<int64_t> recent_;
  uint32_t last_evictions_ = 0;
  bool seen_queries_ = false;
  int64_t max_query_position_ = 0;
};

}  // namespace attendre::gpu
