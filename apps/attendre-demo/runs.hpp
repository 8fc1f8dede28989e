// Driving one layer over the demo stream, and the two quality measures the
// table reports: needles kept and attention mass retained versus full
// attention.
#pragma once

#include "stream.hpp"

#include "common/full_attention.hpp"

#include <attendre/layer.hpp>

#include <cstdint>
#include <span>
#include <vector>

namespace demo {

// What one policy's run leaves behind for the metrics.
struct RunRecord {
  // Per step: the positions held during that step's retrieval, ascending.
  std::vector<std::vector<int64_t>> held;
  // Per step: the last position fed to the layer so far, i.e. the newest key
  // an unbounded memory would hold at that step.
  std::vector<int64_t> horizon;
  // Per stream position: the step that emitted its query.
  std::vector<uint32_t> emitted_at;
  // Positions held once the stream is drained.
  std::vector<int64_t> final_held;
};

// Runs the stream with a snapshot readback after every step.
RunRecord record_run(attendre::AttendreLayer& layer, const Stream& stream);

struct Timing {
  uint64_t steps = 0;
  double seconds = 0.0;
  double steps_per_second() const { return seconds > 0.0 ? static_cast<double>(steps) / seconds : 0.0; }
};

// Runs the stream with no readback at all (StepRequest{outputs = false}), as
// an application that keeps everything on the device would.
Timing time_run(attendre::AttendreLayer& layer, const Stream& stream);

// How many planted needles the run still holds at the end.
uint32_t needles_kept(const Stream& stream, const RunRecord& run);

// Full attention over the stream (common/full_attention.hpp) as the
// reference the runs are measured against: each query attends with a
// softmax over every key up to its horizon. The O(T^2) pass runs once, in
// float64; each run then costs O(T * M).
class FullAttention {
 public:
  // The horizons come from `run`; every run must emit each query at the
  // same step (the Q memory is a FIFO whatever the K/V policy).
  FullAttention(const Stream& stream, double scale, const RunRecord& run);

  // Over every emitted query: the weight full attention (averaged over
  // heads) puts on the keys the run held when that query retrieved. The
  // mean over queries, in [0, 1]; 1 for a memory that never evicts.
  double retained_mass(const RunRecord& run) const;
  // The same mean for the planted needles instead of a run's held keys.
  double needle_mass() const;

 private:
  std::span<const float> key(int64_t position) const;
  template <class HeldKeys>
  double mean_mass(HeldKeys held) const;

  const Stream& stream_;
  std::vector<uint32_t> emitted_at_;
  attendre::apps::FullAttention full_;
};

}  // namespace demo
