// The ATTENDRE layer interface shared by the float64 CPU reference and the
// Vulkan implementation: one step inserts a chunk into the Q and K/V memories,
// retrieves with the queries the Q memory evicts, and emits their outputs
// (spec section 3). Each layer delays its output by N = q_capacity positions.
#pragma once

#include <attendre/config.hpp>

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

// Where a stream stands: positions must strictly increase over its valid
// rows (an empty `valid` means all valid), chunk after chunk.
class PositionCursor {
 public:
  // Throws invalid_argument naming the first position out of order.
  void check(std::span<const int64_t> positions, std::span<const uint8_t> valid) const;
  void accept(std::span<const int64_t> positions, std::span<const uint8_t> valid);

 private:
  int64_t last_ = 0;
  bool seen_ = false;
};

// Checks chunks against a layer's shape and the stream so far: span sizes,
// rows <= S, finite values, strictly increasing positions over valid rows,
// and magnitudes that keep fp32 logits and outputs finite (scale * |q_h| *
// |k_g| and |v| within 2^126, over every query and key of the stream). Both
// backends use it, so both reject the same input with the same message.
class StreamValidator {
 public:
  // Which parts of a chunk a call uses: a layer step uses all of them, a
  // K/V insertion the keys and values, a retrieval the queries.
  enum class Parts { all, keys, queries };

  // Throws invalid_argument naming the problem; changes nothing. Positions
  // must increase across the stream except for queries-only chunks.
  void check(const ChunkView& chunk, const LayerConfig& config, Parts parts = Parts::all) const;
  // Records the chunk's positions and norms once the step that used it succeeded.
  void accept(const ChunkView& chunk, const LayerConfig& config, Parts parts = Parts::all);

 private:
  struct Norms {
    double query = 0.0, key = 0.0, value = 0.0;  // largest head norms of q, k; largest |v|
    uint32_t query_row = 0, key_row = 0, value_row = 0;
  };
  Norms chunk_norms(const ChunkView& chunk, const LayerConfig& config, Parts parts) const;
  void check_magnitudes(const ChunkView& chunk, const LayerConfig& config, Parts parts) const;

  PositionCursor cursor_;
  Norms seen_;
};

class AttendreLayer {
 public:
  virtual ~AttendreLayer() = default;
  virtual const LayerConfig& config() const = 0;

  // Spec 3, steps 1-5, for one chunk (padded to S rows).
  virtual StepResult step(const ChunkView& chunk, const StepRequest& request = {}) = 0;
  // One padding chunk: S invalid rows, used to drain the Q memory.
  virtual StepResult drain_step(const StepRequest& request = {}) = 0;
  // Flush: getAll() of the Q memory retrieves instead of the evicted queries.
  virtual StepResult flush(const StepRequest& request = {}) = 0;
  // Whether the Q memory still holds a valid query that has not been emitted.
  virtual bool has_pending_queries() const = 0;
  // Entries held now, with their scores.
  virtual MemorySnapshot snapshot() = 0;
};

}  // namespace attendre
