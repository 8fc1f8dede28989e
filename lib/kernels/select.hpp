// Selection of the `keep` smallest (key, tie) entries of each row: a tile
// pass and, when a row spans several tiles, a tree of merge passes. Tiled
// (GPUs): bitonic top-k per tile in shared memory (select_tile.comp) and
// merges folding TILE / keep lists (select_merge.comp). Direct (CPU
// devices): per segment a threshold, the entries under it collected and
// ranked (select_direct.comp), and pairwise linear merges
// (select_merge_direct.comp). Serves top-K over
// logits and eviction victims.
#pragma once

#include "kernels/kernel_plan.hpp"
#include "interface/select_merge.h"
#include "interface/select_tile.h"
#include "kernels/kernel.hpp"

#include <attendre/status.hpp>

namespace attendre::kernels {

class Select {
 public:
  enum class Source { logits, evict };

  Select() = default;
  // logits: (logits, K/V memory, lists); evict: (K/V memory, chunk, lists).
  // The tile is the device's largest unless rows hold at most `max_count`
  // candidates and lists at most `max_keep` entries: then the smallest power
  // of two that covers both, so that small memories sort small tiles.
  static Result<Select> create(Context& context, vk::DescriptorArena& arena, const KernelPlan& plan, Source source,
                               vk::BufferBinding first, vk::BufferBinding second, vk::BufferBinding lists,
                               uint32_t max_count = 0, uint32_t max_keep = 1);

  uint32_t tile() const { return tile_; }
  // The direct pass's workgroup and collected-entry capacity (select_direct.comp's W and CAP).
  uint32_t direct_workgroup() const { return workgroup_; }
  uint32_t direct_capacity() const { return capacity_; }
  uint32_t keep_max() const { return keep_max_; }
  // Whether the tiled passes sort within subgroups (KernelPlan::select_shuffles).
  bool shuffles() const { return shuffles_; }

  uint32_t tiles(uint32_t count) const { return count == 0 ? 1 : ceil_div(count, tile_); }
  // Words of the list buffer for `rows` rows of `count` candidates keeping `keep`.
  uint64_t list_words(uint32_t rows, uint32_t count, uint32_t keep) const {
    return uint64_t{rows} * tiles(count) * keep * 3;
  }

  // Records both passes for rows [0, rows); fills params.tiles. `keep` must be
  // a power of two <= max_keep.
  Status record(vk::CommandRecorder& recorder, SelectTileParams params, uint32_t rows) const;

 private:
  void record_direct(vk::CommandRecorder& recorder, SelectTileParams params, uint32_t rows) const;

  Kernel tile_pass_, merge_;
  bool direct_ = false;
  bool shuffles_ = false;
  uint32_t workgroup_ = 1;        // select_direct's
  uint32_t capacity_ = 0;         // select_direct's CAP
  uint32_t merge_workgroup_ = 1;  // select_merge_direct's
  uint32_t tile_ = 0;
  uint32_t keep_max_ = 0;  // the largest list one record() may keep
  uint32_t max_rows_per_dispatch_ = 65535;
};

}  // namespace attendre::kernels
