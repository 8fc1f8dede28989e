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
    each(layer.step(stream.chunk(first, count), request), int64_t{first} + count - 1);
  }
  while (layer.has_pending_queries()) each(layer.drain_step(request), int64_t{stream.tokens} - 1);
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
  (void)layer.snapshot();
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
    : stream_(stream), scale_(scale), keys_(stream.k.begin(), stream.k.end()), emitted_at_(run.emitted_at) {
  const attendre::AttentionShape& shape = stream.shape;
  const uint32_t D = shape.head_dim, H = shape.heads_q, T = stream.tokens;
  horizon_.assign(T, -1);
  log_normalizer_.assign(uint64_t{T} * H, 0.0);
  std::vector<double> logits(T);
  for (uint32_t p = 0; p < T; ++p) {
    if (emitted_at_[p] == kNotEmitted) continue;
    horizon_[p] = run.horizon[emitted_at_[p]];
    const auto visible = static_cast<uint32_t>(horizon_[p] + 1);
    for (uint32_t h = 0; h < H; ++h) {
      const float* q = stream.q.data() + uint64_t{p} * shape.q_row() + uint64_t{h} * D;
      const uint32_t g = h / shape.group();
      double top = -std::numeric_limits<double>::infinity();
      for (uint32_t j = 0; j < visible; ++j) {
        const double* k = keys_.data() + uint64_t{j} * shape.kv_row() + uint64_t{g} * D;
        double dot = 0.0;
        for (uint32_t d = 0; d < D; ++d) dot += static_cast<double>(q[d]) * k[d];
        logits[j] = scale * dot;
        top = std::max(top, logits[j]);
      }
      double sum = 0.0;
      for (uint32_t j = 0; j < visible; ++j) sum += std::exp(logits[j] - top);
      log_normalizer_[uint64_t{p} * H + h] = top + std::log(sum);
    }
  }
}

double FullAttention::held_mass(uint32_t query, const std::vector<int64_t>& keys) const {
  const attendre::AttentionShape& shape = stream_.shape;
  const uint32_t D = shape.head_dim, H = shape.heads_q;
  double mass = 0.0;
  for (int64_t j : keys) {
    if (j < 0 || j > horizon_[query]) continue;  // beyond full attention's reach: weight 0
    for (uint32_t h = 0; h < H; ++h) {
      const float* q = stream_.q.data() + uint64_t{query} * shape.q_row() + uint64_t{h} * D;
      const double* k = keys_.data() + uint64_t(j) * shape.kv_row() + uint64_t{h / shape.group()} * D;
      double dot = 0.0;
      for (uint32_t d = 0; d < D; ++d) dot += static_cast<double>(q[d]) * k[d];
      mass += std::exp(scale_ * dot - log_normalizer_[uint64_t{query} * H + h]);
    }
  }
  return mass / H;
}

double FullAttention::retained_mass(const RunRecord& run) const {
  if (run.emitted_at != emitted_at_)
    attendre::fail(attendre::ErrorCode::invalid_argument, "a run emitted its queries at different steps");
  double total = 0.0;
  uint64_t queries = 0;
  for (uint32_t p = 0; p < stream_.tokens; ++p) {
    if (emitted_at_[p] == kNotEmitted) continue;
    total += held_mass(p, run.held[emitted_at_[p]]);
    ++queries;
  }
  return queries ? total / static_cast<double>(queries) : 0.0;
}

double FullAttention::needle_mass() const {
  double total = 0.0;
  uint64_t queries = 0;
  for (uint32_t p = 0; p < stream_.tokens; ++p) {
    if (emitted_at_[p] == kNotEmitted) continue;
    total += held_mass(p, stream_.needles);
    ++queries;
  }
  return queries ? total / static_cast<double>(queries) : 0.0;
}

}  // namespace demo
