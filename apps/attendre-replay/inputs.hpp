// The input side of the replay file contract (spec section 6): the recorded
// stream, loaded and checked file by file.
#pragma once

#include "cli.hpp"

#include <attendre/layer.hpp>
#include "npy/npy.hpp"

#include <cstdint>
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

// Throws Error naming the offending file, expected vs found, and for bad
// content the file row: everything the layer would refuse in a chunk (a
// non-finite value in a valid row, positions that do not increase, on the
// GPU a position past int32) is refused here first, because only here can
// the message name the file and its row rather than a row of some chunk.
Inputs load_inputs(const Options& options);

// The magnitude limits the layer enforces (attendre's StreamValidator:
// scale * |q_h| * |k_g| and |v| within 2^126, so that fp32 logits and
// outputs stay finite), checked over the whole stream with the file and row
// of the largest offender. Throws Error naming them.
void check_magnitudes(const Options& options, const Inputs& inputs, const LayerConfig& config);

}  // namespace attendre::replay
