#include "replay.hpp"

#include <attendre/error.hpp>

#include <algorithm>
#include <numeric>
#include <stdexcept>
#include <string>

namespace attendre::replay {
namespace {

// A layer that breaks the contract is a library bug: report it loudly
// instead of writing files that look plausible.
[[noreturn]] void contract_broken(const std::string& message) {
  throw std::logic_error("layer broke the replay contract: " + message);
}

}  // namespace

uint64_t expected_steps(const Inputs& in, const LayerConfig& config) {
  const uint64_t S = config.chunk;
  const uint64_t chunks = (in.rows + S - 1) / S;
  // Every step inserts S rows (padding included) into the Q memory, and row
  // r is evicted by the step whose insertions bring the count past r + N.
  uint64_t steps = chunks;
  for (uint64_t r = in.rows; r-- > 0;) {
    if (!in.valid[r]) continue;
    steps = std::max(steps, (r + config.q_capacity + 1 + S - 1) / S);
    break;
  }
  return steps;
}

RunSummary run_layer(AttendreLayer& layer, const Inputs& in, ResultFiles& files) {
  const LayerConfig& c = layer.config();
  const uint64_t S = c.chunk;
  const uint64_t M = c.kv.capacity;
  const uint64_t q_row = c.shape.q_row();
  RunSummary summary;
  summary.rows = in.rows;
  summary.chunks = (in.rows + S - 1) / S;
  const uint64_t bound = expected_steps(in, c);

  // Positions strictly increase over valid rows (checked on load), so a
  // binary search maps an emitted position back to its input row.
  std::vector<uint64_t> valid_rows;
  for (uint64_t row = 0; row < in.rows; ++row)
    if (in.valid[row]) valid_rows.push_back(row);
  std::vector<uint8_t> emitted(in.rows, 0);
  // One step's snapshot in ascending order: O(held), never O(M).
  std::vector<size_t> order;
  std::vector<int64_t> retained;
  std::vector<double> scores;

  uint64_t step = 0;
  auto record = [&](const StepResult& result) {
    const auto& positions = result.emitted_positions;
    if (result.outputs.size() != positions.size() * q_row)
      contract_broken("step " + std::to_string(step) + " emitted " + std::to_string(positions.size()) +
                      " positions but " + std::to_string(result.outputs.size()) + " output floats");
    for (size_t i = 0; i < positions.size(); ++i) {
      const auto it = std::lower_bound(valid_rows.begin(), valid_rows.end(), positions[i],
                                       [&](uint64_t row, int64_t p) { return in.positions[row] < p; });
      if (it == valid_rows.end() || in.positions[*it] != positions[i])
        contract_broken("step " + std::to_string(step) + " emitted position " + std::to_string(positions[i]) +
                        ", which no valid input row holds");
      if (emitted[*it]) contract_broken("position " + std::to_string(positions[i]) + " was emitted twice");
      emitted[*it] = 1;
      std::copy_n(result.outputs.begin() + static_cast<std::ptrdiff_t>(i * q_row), q_row,
                  files.output_row(*it).begin());
    }

    const MemorySnapshot& snap = result.snapshot;
    if (snap.positions.size() > M || snap.scores.size() != snap.positions.size())
      contract_broken("step " + std::to_string(step) + " snapshot holds " + std::to_string(snap.positions.size()) +
                      " positions and " + std::to_string(snap.scores.size()) + " scores, capacity M=" +
                      std::to_string(M));
    // Snapshots are documented ascending; sorting keeps the file contract
    // independent of how a backend lays out its slots.
    order.resize(snap.positions.size());
    std::iota(order.begin(), order.end(), size_t{0});
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return snap.positions[a] < snap.positions[b]; });
    retained.clear();
    scores.clear();
    for (const size_t j : order) {
      retained.push_back(snap.positions[j]);
      scores.push_back(snap.scores[j]);
    }
    files.append_step(retained, scores);
    ++step;
  };

  const StepRequest request{true, true, false};
  for (uint64_t first = 0; first < in.rows; first += S)
    record(layer.step(in.chunk(first, static_cast<uint32_t>(std::min(S, in.rows - first))), request).value_or_throw());
  while (layer.has_pending_queries()) {
    // The drain length is known in advance; going past it would otherwise
    // loop for as long as the layer misbehaves.
    if (step >= bound) contract_broken("queries still pending after " + std::to_string(bound) + " steps");
    record(layer.drain_step(request).value_or_throw());
  }
  for (uint64_t row : valid_rows)
    if (!emitted[row])
      contract_broken("valid row " + std::to_string(row) + " (position " + std::to_string(in.positions[row]) +
                      ") was never emitted");
  // The step files' shape was written before the run.
  if (step != bound)
    contract_broken("the drain ended after " + std::to_string(step) + " steps, the spec's drain rule takes " +
                    std::to_string(bound));
  summary.steps = step;
  return summary;
}

}  // namespace attendre::replay
