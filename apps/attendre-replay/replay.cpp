#include "replay.hpp"

#include <attendre/error.hpp>

#include <algorithm>
#include <limits>
#include <new>
#include <numeric>
#include <stdexcept>
#include <string>
#include <system_error>

namespace attendre::replay {
namespace {

// A layer that breaks the contract is a library bug: report it loudly
// instead of writing files that look plausible.
[[noreturn]] void contract_broken(const std::string& message) {
  throw std::logic_error("layer broke the replay contract: " + message);
}

constexpr float kNoOutputF = std::numeric_limits<float>::quiet_NaN();
constexpr double kNoScore = std::numeric_limits<double>::quiet_NaN();

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

Results run_layer(AttendreLayer& layer, const Inputs& in) {
  const LayerConfig& c = layer.config();
  const uint64_t S = c.chunk;
  const uint64_t M = c.kv.capacity;
  const uint64_t q_row = c.shape.q_row();
  Results r;
  r.rows = in.rows;
  r.heads_q = c.shape.heads_q;
  r.head_dim = c.shape.head_dim;
  r.capacity = c.kv.capacity;
  r.chunks = (in.rows + S - 1) / S;
  const uint64_t bound = expected_steps(in, c);

  // Allocated up front, so an impossible size fails before a long run and
  // names what is too large.
  const std::string results_size = std::to_string(bound) + " steps x M=" + std::to_string(M) + " entries";
  if (bound > std::numeric_limits<size_t>::max() / 16 / M)
    fail(ErrorCode::out_of_host_memory, "retained.npy and scores.npy would need " + results_size +
                                            ", more than memory can address");
  try {
    r.outputs.assign(in.rows * q_row, kNoOutputF);
    r.retained.assign(bound * M, -1);
    r.scores.assign(bound * M, kNoScore);
  } catch (const std::bad_alloc&) {
    fail(ErrorCode::out_of_host_memory, "out of host memory for the results: " + results_size +
                                            " (" + std::to_string(bound * M * 16 >> 20) + " MiB)");
  }

  // Positions strictly increase over valid rows (checked on load), so a
  // binary search maps an emitted position back to its input row.
  std::vector<uint64_t> valid_rows;
  for (uint64_t row = 0; row < in.rows; ++row)
    if (in.valid[row]) valid_rows.push_back(row);
  std::vector<uint8_t> emitted(in.rows, 0);
  std::vector<size_t> order;

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
                  r.outputs.begin() + static_cast<std::ptrdiff_t>(*it * q_row));
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
    for (size_t j = 0; j < order.size(); ++j) {
      r.retained[step * M + j] = snap.positions[order[j]];
      r.scores[step * M + j] = snap.scores[order[j]];
    }
    ++step;
  };

  const StepRequest request{true, true, false};
  for (uint64_t first = 0; first < in.rows; first += S)
    record(layer.step(in.chunk(first, static_cast<uint32_t>(std::min(S, in.rows - first))), request));
  while (layer.has_pending_queries()) {
    // The drain length is known in advance; going past it would otherwise
    // loop for as long as the layer misbehaves.
    if (step >= bound) contract_broken("queries still pending after " + std::to_string(bound) + " steps");
    record(layer.drain_step(request));
  }
  for (uint64_t row : valid_rows)
    if (!emitted[row])
      contract_broken("valid row " + std::to_string(row) + " (position " + std::to_string(in.positions[row]) +
                      ") was never emitted");
  r.steps = step;
  r.retained.resize(step * M);
  r.scores.resize(step * M);
  return r;
}

void write_results(const std::filesystem::path& dir, const Results& r) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) fail(ErrorCode::io_error, dir.string() + ": cannot create the output folder: " + ec.message());

  const int64_t output_shape[] = {static_cast<int64_t>(r.rows), r.heads_q, r.head_dim};
  const int64_t step_shape[] = {static_cast<int64_t>(r.steps), r.capacity};
  std::vector<fs::path> written;
  written.reserve(3);  // push_back after a write must not throw
  auto put = [&](const char* name, auto write) {
    const fs::path path = dir / name;
    write(path);
    written.push_back(path);
  };
  try {
    put("outputs.npy", [&](const fs::path& p) { npy::write<float>(p, output_shape, r.outputs); });
    put("retained.npy", [&](const fs::path& p) { npy::write<int64_t>(p, step_shape, r.retained); });
    put("scores.npy", [&](const fs::path& p) { npy::write<double>(p, step_shape, r.scores); });
  } catch (...) {
    // Only what this call wrote: the path that failed may hold something
    // that is not ours (even a folder), and npy::write left it untouched.
    std::error_code ignored;
    for (const fs::path& path : written) fs::remove(path, ignored);
    throw;
  }
}

}  // namespace attendre::replay
