#include "kernels/flash.hpp"
#include "kernels/score_features.hpp"

#include "core/try.hpp"
#include "interface/constants.h"

#include <attendre/error.hpp>

#include <algorithm>
#include <string>

namespace attendre::kernels {

uint64_t FlashSplits::partial_words(uint32_t queries, uint32_t heads_q) const {
  return splits > 1 ? uint64_t{splits} * queries * heads_q * ATT_FLASH_PARTIAL_WORDS(uint64_t{head_dim}) : 0;
}

Result<uint32_t> flash_max_chunk(const KernelPlan& plan, uint32_t head_dim) {
  if (plan.max_loop_iterations == 0) return kInvalid;
  // flash_attend.comp's loops per invocation: each vec4 of a row costs one
  // iteration, or five where head_dim % 4 != 0 (the scalar reads' own loop).
  const uint64_t block = plan.flash_block_for(head_dim), quads = (uint64_t{head_dim} + 3) / 4;
  const uint64_t per_quad = head_dim % 4 == 0 ? 1 : 5;
  const uint64_t tile_loads = (block * quads + plan.flash_workgroup - 1) / plan.flash_workgroup;
  // The block loop, the tiled loads, the logits' and the values' slot loops
  // over their quads, and the rescale.
  const uint64_t per_block = 1 + tile_loads + 2 * block * (1 + quads * per_quad) + quads;
  // The query row, the output row, and the lane rows' merge (at most
  // log2(kMatmulDirectMaxShare) = 3 steps over the accumulator).
  const uint64_t fixed = 2 * quads * per_quad + 2 * quads + 8 + 3 * (quads + 1);
  const uint64_t blocks = plan.max_loop_iterations > fixed ? (plan.max_loop_iterations - fixed) / per_block : 0;
  if (blocks == 0)
    return Status(ErrorCode::unsupported, "flash attention with head_dim " + std::to_string(head_dim) +
                                              " exceeds this driver's loop limit of " +
                                              std::to_string(plan.max_loop_iterations) + " iterations per invocation");
  return static_cast<uint32_t>(std::min<uint64_t>(blocks * block, kInvalid));
}

Result<FlashSplits> flash_splits(const KernelPlan& plan, uint32_t head_dim, uint32_t held, uint32_t lanes) {
  ATTENDRE_TRY_ASSIGN(const uint32_t per_lane, flash_max_chunk(plan, head_dim));
  const uint32_t most = per_lane == kInvalid ? kInvalid : static_cast<uint32_t>(std::min<uint64_t>(
                                                              uint64_t{per_lane} * std::max(1u, lanes), kInvalid - 1));
  FlashSplits s;
  s.head_dim = head_dim;
  s.splits = held <= most ? 1u : ceil_div(held, most);
  // Even splits: the last one is not left with a sliver.
  s.chunk = std::max(1u, ceil_div(held, s.splits));
  return s;
}

// The direct build keeps q and the accumulator of a row in registers
// (every loop over them unrolled): past 64 quads of each, register
// pressure would spill them to private arrays.
constexpr uint32_t kFlashDirectMaxHeadDim = 256;

Result<FlashAttention> FlashAttention::create(Context& context, vk::DescriptorArena& arena, const KernelPlan& plan,
                                              const FlashBuffers& b, uint32_t head_dim, StoredPath stored,
                                              uint32_t score_features) {
  ATTENDRE_REQUIRE(head_dim > 0, "flash attention needs head_dim >= 1");
  ATTENDRE_TRY(flash_max_chunk(plan, head_dim).status());
  FlashAttention f;
  f.plan_ = plan;
  f.head_dim_ = head_dim;
  f.score_features_ = score_features;
  // The direct build reads fp32 memories only (see flash_attend.comp):
  // fp16 ones take the tiled build on every device. Its loops over q, acc
  // and a block's logits are unrolled: indexed in loops, those arrays kept
  // lavapipe's LLVM compiling for over a minute at head_dim 64.
  const bool direct = plan.direct && stored == StoredPath::f32 && head_dim <= kFlashDirectMaxHeadDim;
  const std::vector<uint32_t> spec = {plan.flash_workgroup, head_dim, plan.flash_block_for(head_dim), score_features};
  // The direct build fetches keys and values as texels where the memory's
  // range can be viewed (DeviceCaps::texel_buffers). With lane rows
  // (FlashAttention::lanes_for) its lane variant is made beside it, over
  // the same bindings.
  const bool lanes = direct && plan.flash_lanes > 1;
  std::vector<uint32_t> lanes_spec = spec;
  lanes_spec.push_back(plan.flash_lanes);
  auto make = [&](ShaderId one_row, ShaderId lane_rows, std::initializer_list<vk::BufferBinding> bindings) -> Status {
    ATTENDRE_TRY_ASSIGN(f.attend_, Kernel::make<FlashParams>(context, arena, one_row, spec, bindings));
    if (lanes) {
      ATTENDRE_TRY_ASSIGN(f.lanes_, Kernel::make<FlashParams>(context, arena, lane_rows, lanes_spec, bindings));
    }
    return {};
  };
  if (direct) {
    Result<vk::BufferBinding> view = b.kv.texel_view(context.caps(), VK_FORMAT_R32G32B32A32_SFLOAT);
    if (view.ok()) {
      f.texel_ = true;
      ATTENDRE_TRY(make(ShaderId::flash_attend_direct_texel, ShaderId::flash_attend_direct_lanes_texel,
                        {b.ring, b.kv, b.outputs, b.partials, view.value()}));
    }
  }
  if (!f.texel_) {
    const ShaderId shader = direct ? ShaderId::flash_attend_direct
                                   : stored_variant(stored, ShaderId::flash_attend, ShaderId::flash_attend_f16,
                                                    ShaderId::flash_attend_f16_words);
    ATTENDRE_TRY(make(shader, ShaderId::flash_attend_direct_lanes, {b.ring, b.kv, b.outputs, b.partials}));
  }
  f.lanes_count_ = lanes ? plan.flash_lanes : 1u;
  ATTENDRE_TRY_ASSIGN(f.combine_, Kernel::make<FlashParams>(context, arena, ShaderId::flash_combine,
                                                            {plan.workgroup, head_dim}, {b.partials, b.outputs}));
  return f;
}

// Lane rows only where a K/V head's rows fit one workgroup of them: with
// more rows the lanes of one row each walk other slots, which lavapipe
// fetched slower than the same slots for neighbouring rows (attendre-bench
// --filter flash_attend, 64 queries: 28.4-29.1 against 22.7-23.1 ms).
uint32_t FlashAttention::lanes_for(uint32_t queries, uint32_t heads_q, uint32_t heads_kv) const {
  if (lanes_count_ <= 1 || heads_kv == 0) return 1;
  const uint64_t rows = uint64_t{queries} * (heads_q / heads_kv);
  return rows * lanes_count_ <= plan_.flash_workgroup ? lanes_count_ : 1u;
}

Status FlashAttention::record(vk::CommandRecorder& recorder, FlashParams p) const {
  if (p.queries == 0) return {};
  ATTENDRE_TRY(check_score_features(score_features_, p, "flash attention"));
  const uint32_t lanes = lanes_for(p.queries, p.heads_q, p.heads_kv);
  ATTENDRE_TRY_ASSIGN(const FlashSplits s, flash_splits(plan_, head_dim_, p.held, lanes));
  p.chunk = s.chunk;
  p.splits = s.splits;
  const uint32_t group = p.heads_q / p.heads_kv;
  const uint32_t row_groups = ceil_div(uint64_t{p.queries} * group, plan_.flash_workgroup / lanes);
  const uint32_t combine_groups = ceil_div(uint64_t{p.heads_q} * (head_dim_ + 1), plan_.workgroup);
  if (row_groups > plan_.max_groups_x || s.splits > plan_.max_groups_y || p.queries > plan_.max_groups_y)
    return Status(ErrorCode::unsupported, "flash attention over " + std::to_string(p.queries) + " queries and " +
                                              std::to_string(p.held) + " slots exceeds the device's workgroup counts");
  (lanes > 1 ? lanes_ : attend_).dispatch(recorder, p, row_groups, s.splits, p.heads_kv);
  if (s.splits > 1) combine_.dispatch(recorder, p, combine_groups, p.queries);
  return {};
}

}  // namespace attendre::kernels
