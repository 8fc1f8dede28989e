// The float64 CPU reference of the streaming stack (spec section 4), built
// from the reference memories, and a dense full-sequence forward that
// knows nothing of memories: ordinary causal or bidirectional attention.
// A value the reference computes non-finite (or past float32 where it hands
// it out as a float) fails the step with numerical_error, as on the device.
#pragma once

#include <attendre/stack.hpp>

#include <memory>

namespace attendre::reference {

class Stack final : public TransformerStack {
 public:
  Stack(const StackConfig& config, WeightSource& weights);
  ~Stack() override;

  const StackConfig& config() const override;
  Result<StackOutput> step(const StackChunk& chunk, const StackRequest& request = {}) override;
  Result<StackOutput> decode(const StackChunk& one, const StackRequest& request = {}) override;
  bool has_pending() const override;
  Result<MemorySnapshot> snapshot(size_t block) override;

  // The smallest decision gap of any block's K/V memory so far (see
  // KeyValueMemory::min_decision_gap).
  double min_decision_gap() const;

  // Loads every cross-attention block's K/V memory from encoder output rows
  // (positions.size() * hidden values, oldest first), replacing what it held.
  void load_encoder_memory(std::span<const int64_t> positions, std::span<const double> rows);

 protected:
  Result<StackOutput> drain_step(const StackRequest& request) override;
  Result<StackOutput> flush_block(size_t block, const StackRequest& request) override;
  void mark_finished() override;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Every valid row of `sequence` through the blocks with plain softmax
// attention over all valid rows (causal: those at or before it), then the
// final norm and logits. Cross-attention blocks attend to every one of
// `encoder_rows` (rows of hidden values). No memory, no waiting: the spec's
// invariants say when the stack must equal this.
StackOutput dense_forward(const StackConfig& config, WeightSource& weights, const StackChunk& sequence, bool causal,
                          const StackRequest& request = {}, std::span<const float> encoder_rows = {});

}  // namespace attendre::reference
