// What one read leaves behind, for the table, the JSON and the report.
#pragma once

#include "memory_settings.hpp"
#include "retention_map.hpp"

#include <attendre/stack.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace reader {

// A block's K/V memory after the finish: positions ascending, their scores.
struct BlockRetention {
  uint32_t capacity = 0;
  std::vector<int64_t> positions;
  std::vector<double> scores;
  bool holds(int64_t position) const;
  uint32_t held_in(int64_t first, int64_t last) const;  // how many of [first, last] it holds
};

struct MassEstimate {
  double value = 0.0;    // mean over the queries, in [0, 1]
  uint64_t queries = 0;  // how many queries the mean is over
};

struct RunResult {
  PolicyList policies;
  std::string label;
  attendre::StackConfig config;
  std::vector<BlockRetention> blocks;  // every block, after the finish
  RetentionMap map;                    // of the last block
  std::optional<MassEstimate> mass;    // block 0's; where the backend lets the host compute it
  uint64_t steps = 0;                  // input steps
  double seconds = 0.0;                // the read: every step, the sampled snapshots, the finish
  std::optional<uint64_t> device_bytes;     // what the stack holds on the GPU (none on --device cpu)
  std::vector<uint64_t> block_device_bytes;
  std::optional<std::string> answer;

  double tokens_per_second(int64_t tokens) const { return seconds > 0 ? static_cast<double>(tokens) / seconds : 0.0; }
  const BlockRetention& last_block() const { return blocks.back(); }
};

}  // namespace reader
