// The checks every backend runs on a stream before using it, so that all
// of them refuse the same input with the same message.
#pragma once

#include <attendre/config.hpp>
#include <attendre/layer.hpp>
#include <attendre/status.hpp>

#include <cstdint>
#include <span>

namespace attendre {

// Where a stream stands: positions must strictly increase over its valid
// rows (an empty `valid` means all valid), chunk after chunk.
class PositionCursor {
 public:
  // invalid_argument naming the first position out of order, or ok.
  Status check(std::span<const int64_t> positions, std::span<const uint8_t> valid) const;
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
  // K/V insertion the keys and values, a retrieval the queries; `positions`:
  // a step whose q, k and v are in device buffers (recorded by an
  // application), where only rows, positions, valid flags and tags are seen.
  enum class Parts { all, keys, queries, positions };

  // invalid_argument naming the problem, or ok; changes nothing. Positions
  // must increase across the stream except for queries-only chunks.
  Status check(const ChunkView& chunk, const LayerConfig& config, Parts parts = Parts::all) const;
  // Records the chunk's positions and norms once the step that used it succeeded.
  void accept(const ChunkView& chunk, const LayerConfig& config, Parts parts = Parts::all);

 private:
  struct Norms {
    double query = 0.0, key = 0.0, value = 0.0;  // largest head norms of q, k; largest |v|
    uint32_t query_row = 0, key_row = 0, value_row = 0;
  };
  Norms chunk_norms(const ChunkView& chunk, const LayerConfig& config, Parts parts) const;
  Status check_magnitudes(const ChunkView& chunk, const LayerConfig& config, Parts parts) const;

  PositionCursor cursor_;
  Norms seen_;
};

}  // namespace attendre
