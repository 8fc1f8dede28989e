// Dense attention in one pass (flash_attend.comp, flash_combine.comp): every
// unmasked held entry of a K/V memory, as score + attend compute it with
// K >= M, without a logits buffer and without the loop limit's ceiling on M.
#pragma once

#include "interface/flash.h"
#include "kernels/kernel.hpp"
#include "kernels/kernel_plan.hpp"
#include "kernels/stored.hpp"

#include <attendre/status.hpp>

namespace attendre::kernels {

// ring and kv: read; outputs: the output rows and log-sum-exps (written);
// partials: the splits' partial rows (written, read by the combine; any
// buffer where one split suffices, see FlashSplits::partial_words).
struct FlashBuffers {
  vk::BufferBinding ring, kv, outputs, partials;
};

// How the held slots are cut so that no invocation's loops pass the
// driver's loop limit (KernelPlan::max_loop_iterations).
struct FlashSplits {
  uint32_t chunk = 0;   // slots per split
  uint32_t splits = 0;  // 1: no partials, no combine
  uint32_t head_dim = 0;
  // Words of partials for `queries` queries of `heads_q` heads (0 for one split).
  uint64_t partial_words(uint32_t queries, uint32_t heads_q) const;
};

// The most slots one invocation may walk for rows of head_dim values:
// every loop iteration counted as if no loop were unrolled (the driver may
// keep any of them), or kInvalid without a loop limit. Fails (unsupported)
// when not even one block of slots fits the limit.
Result<uint32_t> flash_max_chunk(const KernelPlan& plan, uint32_t head_dim);
// `lanes`: lanes per row (KernelPlan::flash_lanes), each walking a share of
// a split's slots, so a split may cover that many times more.
Result<FlashSplits> flash_splits(const KernelPlan& plan, uint32_t head_dim, uint32_t held, uint32_t lanes = 1);

class FlashAttention {
 public:
  FlashAttention() = default;
  // `head_dim` is compiled in (specialization constant 1); `stored` is how
  // the queries, keys and values are read; `score_features` what the
  // logits may need (kernels/score_features.hpp).
  static Result<FlashAttention> create(Context& context, vk::DescriptorArena& arena, const KernelPlan& plan,
                                       const FlashBuffers& buffers, uint32_t head_dim,
                                       StoredPath stored = StoredPath::f32,
                                       uint32_t score_features = kScoreAllFeatures);

  // Records the attention of params.queries queries over params.held slots;
  // fills params.chunk and params.splits (flash_splits) itself. Fails when
  // the grid passes the device's workgroup counts, or when `params` needs a
  // scoring feature the pipeline was built without.
  Status record(vk::CommandRecorder& recorder, FlashParams params) const;
  // Whether the direct build fetches keys and values through a texel view
  // of the memory (flash_attend_direct_texel).
  bool texel() const { return texel_; }
  // Lanes per row that a batch of `queries` queries over `heads_q` /
  // `heads_kv` heads runs with: KernelPlan::flash_lanes where its rows per
  // K/V head leave a workgroup's lanes idle (decoding), else 1.
  uint32_t lanes_for(uint32_t queries, uint32_t heads_q, uint32_t heads_kv) const;

 private:
  KernelPlan plan_;
  uint32_t head_dim_ = 0;
  bool texel_ = false;
  uint32_t lanes_count_ = 1;
  uint32_t score_features_ = kScoreAllFeatures;
  Kernel attend_, lanes_, combine_;  // lanes_: the direct build's lane rows, where plan_.flash_lanes > 1
};

}  // namespace attendre::kernels
