// The retention map of one read: document positions across, sampled steps
// down, each cell saying whether its positions had been read yet, and if
// held, how highly the policy scored them. Positions are binned into at
// most kMaxColumns columns and steps sampled (Schedule), so the map of any
// document stays small enough for a report.
#pragma once

#include <attendre/layer.hpp>

#include <cstdint>
#include <vector>

namespace reader {

struct RetentionMap {
  static constexpr uint32_t kMaxColumns = 320;
  // Cell values: not read yet, read but not held, or held with a score
  // level 0..kLevels-1 (the entry's rank among those held in that row;
  // a column shows the highest level of its positions).
  static constexpr uint8_t kUnread = 0, kEvicted = 1, kHeld = 2, kLevels = 8;

  int64_t tokens = 0;
  uint32_t columns = 0;
  int64_t positions_per_column = 1;
  struct Row {
    uint64_t step = 0;      // input step sampled; the final row is after the finish
    int64_t horizon = -1;   // last position read by then
    bool final = false;
    std::vector<uint8_t> cells;  // `columns` values
  };
  std::vector<Row> rows;

  explicit RetentionMap(int64_t tokens_ = 0);
  // Adds the row of `held` (a snapshot, ascending positions with scores).
  void add_row(uint64_t step, int64_t horizon, const attendre::MemorySnapshot& held, bool final);
};

}  // namespace reader
