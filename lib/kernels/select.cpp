#include "kernels/select.hpp"
#include "core/try.hpp"

#include <attendre/error.hpp>

#include <algorithm>

namespace attendre::kernels {
namespace {

// select_direct.comp's workgroup: enough invocations that their
// kDirectSelectBestKeys best keys each cover keep_max (the threshold step),
// at least 8 (one SIMD group of lavapipe: more cost barriers and context
// switches, 2x slower at K = 64).
uint32_t direct_select_workgroup(const KernelPlan& plan, uint32_t keep_max) {
  const uint32_t cover = next_pow2(ceil_div(keep_max, kDirectSelectBestKeys));
  return std::min(plan.workgroup, std::max(8u, cover));
}

// Collected entries ranked per invocation at most: the ranking loop then
// stays within a few thousand iterations.
constexpr uint32_t kDirectSelectRankPerInvocation = 4 * kDirectSelectRankBlock;

}  // namespace

Result<Select> Select::create(Context& context, vk::DescriptorArena& arena, const KernelPlan& plan, Source source,
                              vk::BufferBinding first, vk::BufferBinding second, vk::BufferBinding lists,
                              uint32_t max_count, uint32_t max_keep) {
  Select s;
  s.direct_ = plan.direct;
  s.tile_ = plan.select_tile;
  s.max_rows_per_dispatch_ = context.caps().max_group_count_y;
  const bool logits = source == Source::logits;
  if (s.direct_) {
    s.tile_ = plan.direct_segment;
    s.keep_max_ = max_count > 0 ? std::min(plan.max_keep(), next_pow2(max_keep)) : plan.max_keep();
    s.workgroup_ = direct_select_workgroup(plan, s.keep_max_);
    s.merge_workgroup_ = plan.workgroup;
    // Collected entries: a tile's worth of shared memory, fewer where ranking
    // them would take too many loop iterations (lavapipe stops loops).
    s.capacity_ = std::min(plan.select_tile, s.workgroup_ * kDirectSelectRankPerInvocation);
    const std::vector<uint32_t> spec = {s.workgroup_, s.capacity_};
    const bool subgroups = plan.subgroup_reductions;
    const ShaderId shader = logits ? (subgroups ? ShaderId::select_direct_logits_subgroups : ShaderId::select_direct_logits)
                                   : (subgroups ? ShaderId::select_direct_evict_subgroups : ShaderId::select_direct_evict);
    ATTENDRE_TRY_ASSIGN(s.tile_pass_,
                        Kernel::make<SelectTileParams>(context, arena, shader, spec, {first, second, lists}));
    const std::vector<uint32_t> merge_spec = {plan.workgroup, s.keep_max_};
    ATTENDRE_TRY_ASSIGN(
        s.merge_, Kernel::make<SelectMergeParams>(context, arena, ShaderId::select_merge_direct, merge_spec, {lists}));
    return s;
  }
  if (max_count > 0) s.tile_ = std::min(plan.select_tile, std::max(next_pow2(max_count), 2 * next_pow2(max_keep)));
  s.keep_max_ = s.tile_ / 2;
  const std::vector<uint32_t> spec = {std::min(plan.select_workgroup, std::max(1u, s.tile_ / 2)), s.tile_};
  s.shuffles_ = plan.select_shuffles(spec[0]);
  const ShaderId shader = s.shuffles_
                              ? (logits ? ShaderId::select_tile_logits_shuffle : ShaderId::select_tile_evict_shuffle)
                              : (logits ? ShaderId::select_tile_logits : ShaderId::select_tile_evict);
  ATTENDRE_TRY_ASSIGN(
      s.tile_pass_, Kernel::make<SelectTileParams>(context, arena, shader, spec, {first, second, lists}, s.shuffles_));
  ATTENDRE_TRY_ASSIGN(
      s.merge_, Kernel::make<SelectMergeParams>(context, arena,
                                                s.shuffles_ ? ShaderId::select_merge_shuffle : ShaderId::select_merge,
                                                spec, {lists}, s.shuffles_));
  return s;
}

void Select::record_direct(vk::CommandRecorder& recorder, SelectTileParams params, uint32_t rows) const {
  params.segment = tile_;
  // One workgroup per (segment, row); a tree of pairwise merges folds the segments.
  for (uint32_t first = 0; first < rows; first += max_rows_per_dispatch_) {
    params.row_offset = first;
    tile_pass_.dispatch(recorder, params, params.tiles, std::min(rows - first, max_rows_per_dispatch_));
  }
  const uint32_t merge_rows = std::max(1u, static_cast<uint32_t>(std::min<uint64_t>(
                                               rows, uint64_t{max_rows_per_dispatch_} * merge_workgroup_ / params.tiles)));
  for (uint32_t stride = 1; stride < params.tiles; stride *= 2) {
    const uint32_t pairs = ceil_div(params.tiles, 2ull * stride);
    for (uint32_t first = 0; first < rows; first += merge_rows) {
      const uint32_t n = std::min(rows - first, merge_rows);
      const SelectMergeParams merge{params.tiles, params.keep, first, stride, n};
      merge_.dispatch(recorder, merge, ceil_div(uint64_t{n} * pairs, merge_workgroup_));
    }
  }
}

Status Select::record(vk::CommandRecorder& recorder, SelectTileParams params, uint32_t rows) const {
  ATTENDRE_REQUIRE(params.keep >= 1 && params.keep <= keep_max_ && (params.keep & (params.keep - 1)) == 0,
                   "select: keep must be a power of two of at most half a tile");
  params.tiles = tiles(params.count);
  if (direct_) {
    record_direct(recorder, params, rows);
    return {};
  }
  for (uint32_t first = 0; first < rows; first += max_rows_per_dispatch_) {
    params.row_offset = first;
    tile_pass_.dispatch(recorder, params, params.tiles, std::min(rows - first, max_rows_per_dispatch_));
  }
  // A tree of merge passes, each folding fan_in lists into one.
  const uint32_t fan_in = tile_ / params.keep;
  for (uint64_t stride = 1; stride < params.tiles; stride *= fan_in) {
    const uint32_t groups = ceil_div(params.tiles, stride * fan_in);
    for (uint32_t first = 0; first < rows; first += max_rows_per_dispatch_) {
      const SelectMergeParams merge{params.tiles, params.keep, first, static_cast<uint32_t>(stride), 0};
      merge_.dispatch(recorder, merge, groups, std::min(rows - first, max_rows_per_dispatch_));
    }
  }
  return {};
}

}  // namespace attendre::kernels
