// The float64 CPU reference of spec sections 1-3. It is the contract every GPU
// path is tested against, so it favours plain loops over speed.
#pragma once

#include <attendre/data_only_memory.hpp>
#include <attendre/layer.hpp>

#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <vector>

namespace attendre {
class StreamValidator;
}

namespace attendre::reference {

// Valid queries handed to retrieve(), in stream order.
struct QueryBatch {
  std::vector<int64_t> positions;
  std::vector<uint32_t> tags;
  std::vector<double> q;  // positions.size() * heads_q * head_dim
  size_t size() const { return positions.size(); }
};

// Result of retrieve() for n queries and H_q heads.
struct Retrieval {
  uint32_t queries = 0;
  uint32_t heads = 0;
  // R(q,h) as indices into the memory's entries, best first (larger logit,
  // then smaller position), with their logits and softmax weights.
  std::vector<std::vector<uint32_t>> selected;  // [q * heads + h]
  std::vector<std::vector<double>> logits;
  std::vector<std::vector<double>> weights;
  std::vector<double> outputs;  // [q][h][d]
};

// K/V memory of capacity M with an eviction policy (spec 2).
class KeyValueMemory {
 public:
  struct Entry {
    int64_t position = 0;
    double score = 0.0;
    uint32_t tag = 0;
    std::vector<double> key;    // heads_kv * head_dim
    std::vector<double> value;
  };

  // max_insert is S, the largest chunk inserted at once; used by the
  // feasibility check of spec 2.1.
  KeyValueMemory(const AttentionShape& shape, const KvMemoryConfig& config, uint32_t max_insert);

  // Spec 2.1: inserts the valid rows of `chunk` (k, v, positions, valid, tags)
  // and returns the evicted entries sorted by position.
  EvictedEntries insert(const ChunkView& chunk);
  // The same for rows already in float64 (a stack's projections); empty
  // `valid` or `tags` mean all valid, tag 0.
  EvictedEntries insert_rows(std::span<const double> k, std::span<const double> v,
                             std::span<const int64_t> positions, std::span<const uint8_t> valid,
                             std::span<const uint32_t> tags);

  // The dot product of query head h (head_dim values) at position p_q with
  // an entry; empty: the plain dot with the entry's key head g(h). A stack's
  // LM-Infinite block rotates here, by the capped distance.
  using PairDot = std::function<double(uint32_t h, const double* q, int64_t p_q, const Entry& entry)>;

  // Spec 2.2 and 2.3 for a batch of valid queries.
  Retrieval retrieve(const QueryBatch& queries, const RetrievalConfig& retrieval, double scale,
                     const PairDot& dot = {}) const;

  // Spec 2.1's pinning, with n_sink = 0 pinning nothing (not even negative positions).
  bool pinned(int64_t position) const { return config_.n_sink > 0 && position < static_cast<int64_t>(config_.n_sink); }

  // Spec 2.4: policy update after attend; a no-op for an empty batch.
  void update_scores(const QueryBatch& queries, const Retrieval& retrieval);

  MemorySnapshot snapshot() const;
  const std::vector<Entry>& entries() const { return entries_; }
  const AttentionShape& shape() const { return shape_; }
  const KvMemoryConfig& config() const { return config_; }

  // The initial score new entries would get now (mu - k*sigma or constant),
  // for the attention-scored policies.
  double attention_initial_score() const;

  // The smallest non-zero gap seen at a decision boundary so far: between
  // the last kept and the first dropped candidate of every top-K and every
  // eviction. Tests comparing an fp32 implementation skip streams whose
  // decisions hinge on a gap below fp32 resolution.
  double min_decision_gap() const { return min_gap_; }

 private:
  double initial_score(int64_t position, double attention_initial) const;

  AttentionShape shape_;
  KvMemoryConfig config_;
  std::vector<Entry> entries_;
  void note_gap(double kept, double dropped) const;

  bool seen_queries_ = false;
  int64_t max_query_position_ = 0;  // i_max of spec 2.4
  mutable double min_gap_ = std::numeric_limits<double>::infinity();
};

// One ATTENDRE layer (spec 3) on the CPU in float64.
class Layer final : public AttendreLayer {
 public:
  explicit Layer(const LayerConfig& config);
  ~Layer() override;

  const LayerConfig& config() const override { return config_; }
  Result<StepResult> step(const ChunkView& chunk, const StepRequest& request = {}) override;
  Result<StepResult> drain_step(const StepRequest& request = {}) override;
  Result<StepResult> flush(const StepRequest& request = {}) override;
  bool has_pending_queries() const override;
  Result<MemorySnapshot> snapshot() override { return kv_.snapshot(); }

  const KeyValueMemory& kv_memory() const { return kv_; }

 private:
  struct QueryRow {
    int64_t position = 0;
    bool valid = false;
    uint32_t tag = 0;
    std::vector<double> q;
  };

  // The throwing code step(), flush() and friends capture (the reference keeps exceptions).
  StepResult run_step(const ChunkView& chunk, const StepRequest& request);
  StepResult run_flush(const StepRequest& request);
  StepResult attend_evicted(std::vector<QueryRow> evicted, EvictedEntries evicted_kv, const StepRequest& request);

  LayerConfig config_;
  DataOnlyMemory<QueryRow> q_memory_;
  KeyValueMemory kv_;
  std::unique_ptr<StreamValidator> validator_;
};

}  // namespace attendre::reference
