// The retrieval kernels of one K/V memory, recorded per batch of queries:
// score -> (sum_heads) -> select top-K -> attend -> usage -> policy_update.
#pragma once

#include "kernels/kernel_plan.hpp"
#include "interface/policy.h"
#include "interface/retrieve.h"
#include "interface/score.h"
#include "kernels/kernel.hpp"

#include <attendre/status.hpp>
#include "kernels/select.hpp"
#include "kernels/stored.hpp"

namespace attendre::kernels {

struct RetrieveBuffers {
  vk::BufferBinding ring, kv, logits, lists, attention, usage;
};

class RetrieveKernels {
 public:
  RetrieveKernels() = default;
  // `capacity` (M) and `keep` (the top-K list length) size the select tile;
  // `lm_infinite` scores with the LM-Infinite query and key variants;
  // `stored` is how score and attend read the queries, keys and values;
  // `score_features` what the logits may need (kernels/score_features.hpp).
  static Result<RetrieveKernels> create(Context& context, vk::DescriptorArena& arena, const KernelPlan& plan,
                                        const RetrieveBuffers& buffers, uint32_t capacity, uint32_t keep,
                                        bool lm_infinite = false, StoredPath stored = StoredPath::f32,
                                        uint32_t score_features = kScoreAllFeatures);

  // Fails (invalid_argument) when `params` needs a feature the score
  // pipeline was built without.
  Status score(vk::CommandRecorder& recorder, const ScoreParams& params) const;
  void sum_heads(vk::CommandRecorder& recorder, const RetrieveParams& params) const;
  Status top_k(vk::CommandRecorder& recorder, const SelectTileParams& params, uint32_t rows) const {
    return select_.record(recorder, params, rows);
  }
  void attend(vk::CommandRecorder& recorder, const RetrieveParams& params) const;
  // Zeroes the usage and used rows of the batch (transfer fills), then
  // accumulates them, one workgroup per query over its lists only.
  void usage(vk::CommandRecorder& recorder, const RetrieveParams& params) const;
  void policy_update(vk::CommandRecorder& recorder, const PolicyParams& params) const;

  const Select& select() const { return select_; }

  // Whether the direct score and attend fetch keys and values through a
  // texel view of the memory (score_direct*_texel, attend_direct_texel).
  bool texel() const { return texel_; }

 private:
  // Slots per invocation of the direct score tile (LM-Infinite: one).
  uint32_t direct_score_slots() const { return lm_infinite_ ? 1u : plan_.direct_score_slots; }

  KernelPlan plan_;
  bool lm_infinite_ = false;
  bool texel_ = false;
  uint32_t score_features_ = kScoreAllFeatures;
  Kernel score_, sum_heads_, attend_, usage_, policy_update_;
  vk::BufferBinding usage_rows_;  // binding 2 of usage_: the rows its fills zero
  Select select_;
};

}  // namespace attendre::kernels
