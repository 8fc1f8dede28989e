// Loading a recorded stream, running one layer over it, and writing the
// result files of spec section 6. Everything is computed in memory before
// anything is written, so a failure never leaves partial output.
#pragma once

#include "cli.hpp"

#include <attendre/layer.hpp>
#include <attendre/npy.hpp>

#include <cstdint>
#include <filesystem>
#include <vector>

namespace attendre::replay {

// The stream, checked against the file contract. Defaults are materialized
// (all valid, positions 0..T-1) so the runner has one code path.
struct Inputs {
  AttentionShape shape;
  uint64_t rows = 0;  // T
  npy::Array q, k, v;
  std::vector<uint8_t> valid;
  std::vector<int64_t> positions;
  std::vector<uint32_t> tags;  // empty without --tags

  // Rows [first, first + count) as one chunk.
  ChunkView chunk(uint64_t first, uint32_t count) const;
};

// Throws Error naming the offending file, expected vs found.
Inputs load_inputs(const Options& options);

struct Results {
  uint64_t rows = 0;
  uint32_t heads_q = 0, head_dim = 0, capacity = 0;
  uint64_t chunks = 0;  // input steps; the rest of `steps` are drain steps
  uint64_t steps = 0;
  std::vector<float> outputs;     // [rows, heads_q, head_dim]
  std::vector<int64_t> retained;  // [steps, capacity]
  std::vector<double> scores;     // [steps, capacity]
};

// The number of steps the spec's drain rule takes for this stream: the last
// valid row leaves the Q memory once N more rows were inserted after it.
uint64_t expected_steps(const Inputs& inputs, const LayerConfig& config);

// Steps `layer` over the inputs, then drains. Throws Error if the layer
// breaks the contract (unknown or repeated positions, a valid row never
// emitted, a drain that does not end), so that a library bug is reported
// rather than written out.
Results run_layer(AttendreLayer& layer, const Inputs& inputs);

// Writes outputs.npy, retained.npy and scores.npy into `dir` (created if
// missing). On failure removes the files this call wrote, then rethrows.
void write_results(const std::filesystem::path& dir, const Results& results);

}  // namespace attendre::replay
