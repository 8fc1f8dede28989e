#include "core/fail.hpp"
#include "runs.hpp"

#include <attendre/error.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>

namespace demo {
namespace {

constexpr uint32_t kNotEmitted = std::numeric_limits<uint32_t>::max();

// Feeds every chunk, then drains, calling `each(result, last_fed)` per step.
template <typename Each>
void feed(attendre::AttendreLayer& layer, const Stream& stream, const attendre::StepRequest& request, Each each) {
  const uint32_t S = layer.config().chunk;
  for (uint32_t first = 0; first < stream.tokens; first += S) {
    const uint32_t count = std::min(S, stream.tokens - first);
    each(layer.step(stream.chunk(first, count), request).value_or_throw(), int64_t{first} + count - 1);
  }
  while (layer.has_pending_queries()) each(layer.drain_step(request).value_or_throw(), int64_t{stream.tokens} - 1);
}

}  // namespace

RunRecord record_run(attendre::AttendreLayer& layer, const Stream& stream) {
  RunRecord run;
  run.emitted_at.assign(stream.tokens, kNotEmitted);
  attendre::StepRequest request;
  request.outputs = false;
  request.snapshot = true;
  feed(layer, stream, request, [&](attendre::StepResult result, int64_t last_fed) {
    const auto step = static_cast<uint32_t>(run.held.size());
    for (int64_t p : result.emitted_positions) run.emitted_at[static_cast<size_t>(p)] = step;
    run.held.push_back(std::move(result.snapshot.positions));
    run.horizon.push_back(last_fed);
  });
  run.final_held = run.held.empty() ? std::vector<int64_t>{} : run.held.back();
  return run;
}

Timing time_run(attendre::AttendreLayer& layer, const Stream& stream) {
  // A CPU clock is enough to show the policies' relative cost in a demo;
  // the benchmark measures the device itself with GPU timestamps.
  attendre::StepRequest request;
  request.outputs = false;
  Timing timing;
  const auto start = std::chrono::steady_clock::now();
  feed(layer, stream, request, [&](const attendre::StepResult&, int64_t) { ++timing.steps; });
  // Steps without readback return before the device finishes: reading the
  // memory back waits for the last one, so it belongs inside the clock.
  (void)layer.snapshot().value_or_throw();
  timing.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return timing;
}

uint32_t needles_kept(const Stream& stream, const RunRecord& run) {
  uint32_t kept = 0;
  for (int64_t p : stream.needles)
    kept += std::binary_search(run.final_held.begin(), run.final_held.end(), p) ? 1u : 0u;
  return kept;
}

FullAttention::FullAttention(const Stream& stream, double scale, const RunRecord& run)
    : stream_(stream), emitted_at_(run.emitted_at), full_(stream.shape, scale) {
  const attendre::AttentionShape& shape = stream.shape;
  for (uint32_t p = 0; p < stream.tokens; ++p) {
    if (emitted_at_[p] == kNotEmitted) continue;
    full_.add_query(p, std::span<const float>(stream.q).subspan(uint64_t{p} * shape.q_row(), shape.q_row()),
                    run.horizon[emitted_at_[p]]);
  }
  for (uint32_t j = 0; j < stream.tokens; ++j) full_.add_key(j, key(j));
}

std::span<const float> FullAttention::key(int64_t position) const {
  const uint32_t row = stream_.shape.kv_row();
  return std::span<const float>(stream_.k).subspan(uint64_t(position) * row, row);
}

template <class HeldKeys>
double FullAttention::mean_mass(HeldKeys held) const {
  const auto lookup = [this](int64_t j) { return key(j); };
  double total = 0.0;
  uint64_t queries = 0;
  for (uint32_t p = 0; p < stream_.tokens; ++p) {
    if (emitted_at_[p] == kNotEmitted) continue;
    total += full_.mass(p, held(p), lookup);
    ++queries;
  }
  return queries ? total / static_cast<double>(queries) : 0.0;
}

double FullAttention::retained_mass(const RunRecord& run) const {
  if (run.emitted_at != emitted_at_)
    attendre::fail(attendre::ErrorCode::invalid_argument, "a run emitted its queries at different steps");
  return mean_mass([&](uint32_t p) -> const std::vector<int64_t>& { return run.held[emitted_at_[p]]; });
}

double FullAttention::needle_mass() const {
  return mean_mass([&](uint32_t) -> const std::vector<int64_t>& { return stream_.needles; });
}

}  // namespace demo
