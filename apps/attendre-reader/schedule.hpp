// When things happen in a read, known before it starts: the input steps,
// which of them take a snapshot of the memories (every `stride`-th and the
// last, so a long document costs a bounded number of readbacks and its
// retention map a bounded number of rows), and when block 0 lets each query
// retrieve (its Q memory is a FIFO of N positions, whatever the policy).
#pragma once

#include <algorithm>
#include <cstdint>

namespace reader {

struct Schedule {
  static constexpr uint64_t kMaxSampledSteps = 160;

  int64_t tokens = 0;
  uint32_t chunk = 1;  // S
  uint32_t wait = 0;   // block 0's N

  Schedule(int64_t tokens_, uint32_t chunk_, uint32_t wait_) : tokens(tokens_), chunk(chunk_), wait(wait_) {}

  uint64_t input_steps() const { return (static_cast<uint64_t>(tokens) + chunk - 1) / chunk; }
  uint64_t stride() const { return std::max<uint64_t>(1, (input_steps() + kMaxSampledSteps - 1) / kMaxSampledSteps); }
  bool sampled(uint64_t step) const { return step % stride() == 0 || step + 1 == input_steps(); }
  // The step at which block 0 evicts the query at `position` from its Q
  // memory and retrieves with it: once N more positions have come in
  // (padding included). At or past input_steps(): during the finish.
  uint64_t retrieval_step(int64_t position) const { return static_cast<uint64_t>(position + wait) / chunk; }
  // The last position fed by the end of input step `step`.
  int64_t horizon(uint64_t step) const {
    return std::min<int64_t>(static_cast<int64_t>((step + 1) * chunk), tokens) - 1;
  }
};

}  // namespace reader
