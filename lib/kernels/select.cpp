#include "kernels/select.hpp"

#include <attendre/error.hpp>

#include <algorithm>

namespace attendre::kernels {

Select::Select(Context& context, vk::DescriptorArena& arena, const gpu::KernelPlan& plan, Source source,
               vk::BufferBinding first, vk::BufferBinding second, vk::BufferBinding lists, uint32_t max_count,
               uint32_t max_keep)
    : tile_(plan.select_tile), max_rows_per_dispatch_(context.caps().max_group_count_y) {
  if (max_count > 0) tile_ = std::min(plan.select_tile, std::max(gpu::next_pow2(max_count), 2 * gpu::next_pow2(max_keep)));
  const std::vector<uint32_t> spec = {std::min(plan.select_workgroup, std::max(1u, tile_ / 2)), tile_};
  const ShaderId shader = source == Source::logits ? ShaderId::select_tile_logits : ShaderId::select_tile_evict;
  tile_pass_ = Kernel::make<SelectTileParams>(context, arena, shader, spec, {first, second, lists});
  merge_ = Kernel::make<SelectMergeParams>(context, arena, ShaderId::select_merge, spec, {lists});
}

void Select::record(vk::CommandRecorder& recorder, SelectTileParams params, uint32_t rows) const {
  require(params.keep >= 1 && params.keep * 2 <= tile_ && (params.keep & (params.keep - 1)) == 0,
          "select: keep must be a power of two of at most half a tile");
  params.tiles = tiles(params.count);
  for (uint32_t first = 0; first < rows; first += max_rows_per_dispatch_) {
    params.row_offset = first;
    tile_pass_.dispatch(recorder, params, params.tiles, std::min(rows - first, max_rows_per_dispatch_));
  }
  // A tree of merge passes, each folding fan_in lists into one.
  const uint32_t fan_in = tile_ / params.keep;
  for (uint64_t stride = 1; stride < params.tiles; stride *= fan_in) {
    recorder.barrier("the merge pass reads the lists the previous pass wrote");
    const uint32_t groups = ceil_div(params.tiles, stride * fan_in);
    for (uint32_t first = 0; first < rows; first += max_rows_per_dispatch_) {
      const SelectMergeParams merge{params.tiles, params.keep, first, static_cast<uint32_t>(stride)};
      merge_.dispatch(recorder, merge, groups, std::min(rows - first, max_rows_per_dispatch_));
    }
  }
}

}  // namespace attendre::kernels
