// The ATTENDRE layer interface shared by the float64 CPU reference and the
// Vulkan implementation: one step inserts a chunk into the Q and K/V memories,
// retrieves with the queries the Q memory evicts, and emits their outputs
// (spec section 3). Each layer delays its output by N = q_capacity positions.
#pragma once

#include <attendre/config.hpp>
#include <attendre/status.hpp>

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

namespace attendre {

// One chunk of at most S rows in host memory, row-major. Rows past `rows`
// up to S are padding (invalid). Empty `valid` means all rows valid; empty
// `tags` means tag 0 everywhere.
struct ChunkView {
  uint32_t rows = 0;
  std::span<const float> q;               // rows * heads_q * head_dim
  std::span<const float> k;               // rows * heads_kv * head_dim
  std::span<const float> v;               // rows * heads_kv * head_dim
  std::span<const int64_t> positions;     // rows
  std::span<const uint8_t> valid;         // rows, or empty
  std::span<const uint32_t> tags;         // rows, or empty
};

// Entries held by a K/V memory, ascending by position.
struct MemorySnapshot {
  std::vector<int64_t> positions;
  std::vector<double> scores;  // policy score after the step's update
};

// Entries evicted by one insertion, ascending by position.
struct EvictedEntries {
  std::vector<int64_t> positions;
  std::vector<double> scores;
  std::vector<float> keys;    // positions.size() * heads_kv * head_dim
  std::vector<float> values;
};

// What the caller wants back from a step. Everything else stays on the device.
struct StepRequest {
  bool outputs = true;
  bool snapshot = false;
  bool evicted = false;  // needs kv.copy_out_evicted
};

struct StepResult {
  // Valid queries evicted from the Q memory this step, in stream order, and
  // their outputs o[q][h][d] (empty unless requested).
  std::vector<int64_t> emitted_positions;
  std::vector<float> outputs;
  MemorySnapshot snapshot;  // filled when requested
  EvictedEntries evicted;   // filled when requested
};

// Errors as values (attendre/status.hpp): every call that can fail returns
// a Result; Result::value_or_throw() throws it where wanted.
class AttendreLayer {
 public:
  virtual ~AttendreLayer() = default;
  virtual const LayerConfig& config() const = 0;

  // Spec 3, steps 1-5, for one chunk (padded to S rows).
  virtual Result<StepResult> step(const ChunkView& chunk, const StepRequest& request = {}) = 0;
  // One padding chunk: S invalid rows, used to drain the Q memory.
  virtual Result<StepResult> drain_step(const StepRequest& request = {}) = 0;
  // Flush: getAll() of the Q memory retrieves instead of the evicted queries.
  virtual Result<StepResult> flush(const StepRequest& request = {}) = 0;
  // Whether the Q memory still holds a valid query that has not been emitted.
  virtual bool has_pending_queries() const = 0;
  // Entries held now, with their scores.
  virtual Result<MemorySnapshot> snapshot() = 0;

};

}  // namespace attendre
