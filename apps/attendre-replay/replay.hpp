// Running one layer over a recorded stream (spec section 6): chunks of S
// rows, then drain steps, each step's results streamed into the result
// files as it completes.
#pragma once

#include "inputs.hpp"
#include "result_files.hpp"

#include <attendre/layer.hpp>

#include <cstdint>

namespace attendre::replay {

struct RunSummary {
  uint64_t rows = 0;
  uint64_t chunks = 0;  // input steps; the rest of `steps` are drain steps
  uint64_t steps = 0;
};

// The number of steps the spec's drain rule takes for this stream: the last
// valid row leaves the Q memory once N more rows were inserted after it.
uint64_t expected_steps(const Inputs& inputs, const LayerConfig& config);

// Steps `layer` over the inputs, then drains, writing every step into
// `files` (made for expected_steps() steps). Throws if the layer breaks the
// contract (unknown or repeated positions, a valid row never emitted, a
// drain of another length than the spec's), so that a library bug is
// reported rather than written out.
RunSummary run_layer(AttendreLayer& layer, const Inputs& inputs, ResultFiles& files);

}  // namespace attendre::replay
