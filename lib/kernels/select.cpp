#include "kernels/select.hpp"

#include <attendre/error.hpp>

#include <algorithm>

namespace attendre::kernels {

Select::Select(Context& context, vk::DescriptorArena& arena, const gpu::KernelPlan& plan, Source source,
               vk::BufferBinding first, vk::BufferBinding second, vk::BufferBinding lists)
    : tile_(plan.select_tile), max_rows_per_dispatch_(context.caps().max_group_count_y) {
  const std::vector<uint32_t> spec = {plan.select_workgroup, plan.select_tile};
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
  if (params.tiles == 1) return;
  recorder.barrier("merge reads the per-tile lists");
  for (uint32_t first = 0; first < rows; first += max_rows_per_dispatch_) {
    const SelectMergeParams merge{params.tiles, params.keep, first};
    merge_.dispatch(recorder, merge, 1, std::min(rows - first, max_rows_per_dispatch_));
  }
}

}  // namespace attendre::kernels
