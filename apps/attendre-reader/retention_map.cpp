#include "retention_map.hpp"

#include <algorithm>
#include <numeric>

namespace reader {

RetentionMap::RetentionMap(int64_t tokens_) : tokens(tokens_) {
  positions_per_column = std::max<int64_t>(1, (tokens + kMaxColumns - 1) / kMaxColumns);
  columns = static_cast<uint32_t>((tokens + positions_per_column - 1) / positions_per_column);
}

void RetentionMap::add_row(uint64_t step, int64_t horizon, const attendre::MemorySnapshot& held, bool final) {
  Row row{step, horizon, final, std::vector<uint8_t>(columns, kUnread)};
  for (uint32_t c = 0; c < columns; ++c)
    if (static_cast<int64_t>(c) * positions_per_column <= horizon) row.cells[c] = kEvicted;
  // Rank by score (ties by position, as eviction breaks them): the level is
  // which eighth of the held entries an entry's score falls in.
  std::vector<size_t> order(held.positions.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return held.scores[a] < held.scores[b]; });
  for (size_t rank = 0; rank < order.size(); ++rank) {
    const int64_t p = held.positions[order[rank]];
    if (p < 0 || p >= tokens) continue;
    const auto level = static_cast<uint8_t>(kHeld + rank * kLevels / order.size());
    uint8_t& cell = row.cells[static_cast<size_t>(p / positions_per_column)];
    cell = std::max(cell, level);
  }
  rows.push_back(std::move(row));
}

}  // namespace reader
