// Scratch memory of the retrieval kernels (logits, top-K lists, attention
// outputs and weights, usage), sized for a batch of queries. Layers that run
// one after another in a command buffer share one scratch: a stack of L
// layers pays for the largest layer's scratch once, not L times.
#pragma once

#include "kernels/kernel_plan.hpp"
#include "vulkan/buffer.hpp"

#include <attendre/config.hpp>
#include <attendre/stack.hpp>
#include <attendre/status.hpp>

#include <memory>

namespace attendre::gpu {

// Words of each scratch buffer.
struct ScratchWords {
  uint64_t logits = 0, lists = 0, attention = 0, usage = 0;
  ScratchWords max(const ScratchWords& other) const;
};

// How one layer uses the scratch.
struct RetrievalPlan {
  uint32_t batch = 0;       // queries per batch
  bool full = false;        // K >= M: every held entry, no selection
  // full and nothing reads per-entry weights (fifo keeps no score) and no
  // LM-Infinite variants: flash_attend in one pass instead of score + attend,
  // its split partials in the logits buffer, its log-sum-exps at weights_offset.
  bool flash = false;
  uint32_t top_keep = 0;    // top-K list length: next power of two >= K
  uint32_t list_count = 0;  // K
  uint64_t outputs_words = 0;   // attention buffer: outputs [max_queries][heads_q][head_dim] first
  uint64_t weights_offset = 0;  // then weights [batch * heads_q][list_count]
  uint64_t summed_offset = 0;   // logits buffer: summed rows after the per-head rows
  uint64_t used_offset = 0;     // usage buffer: used flags after the usage rows
  ScratchWords words;
};

// Fails (unsupported) when K, S or head_dim exceed this device's kernels,
// when one query's scratch cannot fit a storage-buffer range, or when the
// loops of one invocation would pass the driver's iteration limit
// (DeviceCaps::max_loop_iterations; flash attention splits its loops instead).
// `lm_infinite`: the memory scores with LM-Infinite's variants (a stack's
// RoPE block), which only score + attend implement.
Result<RetrievalPlan> plan_retrieval(const LayerConfig& config, const kernels::KernelPlan& plan, uint32_t max_queries,
                                     const DeviceCaps& caps, const LmInfinite& lm_infinite = {});

class RetrievalScratch {
 public:
  static Result<std::unique_ptr<RetrievalScratch>> create(Context& context, const ScratchWords& words);

  const vk::Buffer& logits() const { return logits_; }
  const vk::Buffer& lists() const { return lists_; }
  const vk::Buffer& attention() const { return attention_; }
  const vk::Buffer& usage() const { return usage_; }
  const ScratchWords& words() const { return words_; }
  uint64_t device_bytes() const;

 private:
  explicit RetrievalScratch(const ScratchWords& words) : words_(words) {}

  ScratchWords words_;
  vk::Buffer logits_, lists_, attention_, usage_;
};

}  // namespace attendre::gpu
