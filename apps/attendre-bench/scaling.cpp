#include "core/fail.hpp"
#include "scaling.hpp"

#include "feeder.hpp"
#include "stats.hpp"

#include <attendre/error.hpp>
#include <attendre/gpu.hpp>

#include <chrono>
#include <memory>
#include <cstdio>

namespace bench {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

struct Plan {
  attendre::AttentionShape shape;
  uint32_t S, M, N, K;
  std::vector<uint64_t> lengths;
  double stream_budget_s;  // bounded: real streaming allowed before positions jump ahead
  double dense_budget_s;   // dense: time allowed for the whole series
  uint32_t repeats;
};

// The mobile preset's attention layer; --quick a smaller one.
Plan plan(bool quick) {
  if (quick) return {{4, 1, 64}, 16, 256, 64, 32, {1024, 4096, 16384}, 3.0, 6.0, 2};
  return {{9, 3, 64}, 64, 512, 256, 64, {1024, 4096, 16384, 65536, 262144, 1048576}, 120.0, 300.0, 3};
}

// Mean wall-clock ms of `repeats` steps after one warm-up step, outputs not read back.
double time_steps(attendre::gpu::Layer& layer, LayerFeeder& feeder, uint32_t repeats) {
  attendre::StepRequest quiet;
  quiet.outputs = false;
  layer.step(feeder.next(), quiet).value_or_throw();
  layer.wait().or_throw();
  const auto start = Clock::now();
  for (uint32_t i = 0; i < repeats; ++i) layer.step(feeder.next(), quiet).value_or_throw();
  layer.wait().or_throw();
  return seconds_since(start) * 1e3 / repeats;
}

attendre::LayerConfig config(const Plan& p, uint32_t M, uint32_t N, uint32_t K, attendre::Policy policy) {
  attendre::LayerConfig c;
  c.shape = p.shape;
  c.chunk = p.S;
  c.q_capacity = N;
  c.kv.capacity = M;
  c.kv.policy = policy;
  c.retrieval.top_k = K;
  return c;
}

// Bounded: one layer streams the document. Lengths are reached by
// streaming while the budget lasts; past it the positions jump ahead (a gap
// in the stream), which measures the same full memory at the larger
// positions. Each point records how many positions were really streamed.
void bounded_series(attendre::Context& context, const Plan& p, Scaling& out) {
  auto layer_owner = attendre::gpu::Layer::create(context, config(p, p.M, p.N, p.K, attendre::Policy::lra_sum())).value_or_throw();
  attendre::gpu::Layer& layer = *layer_owner;
  LayerFeeder feeder(p.shape, p.S, 11);
  attendre::StepRequest quiet;
  quiet.outputs = false;
  uint64_t streamed = 0;
  double step_s = 0.0, budget_s = p.stream_budget_s;
  for (uint64_t length : p.lengths) {
    const uint64_t start_at = length - p.S;  // the warm-up step reaches `length`, timed steps go past it
    const uint64_t todo = start_at > static_cast<uint64_t>(feeder.position()) ? start_at - feeder.position() : 0;
    const uint64_t steps = todo / p.S;
    const auto t = Clock::now();
    if (streamed == 0 || static_cast<double>(steps) * step_s <= budget_s) {
      for (uint64_t i = 0; i < steps; ++i) layer.step(feeder.next(), quiet).value_or_throw();
      layer.wait().or_throw();
      streamed += steps * p.S;
      if (steps) step_s = seconds_since(t) / static_cast<double>(steps);
      budget_s -= seconds_since(t);
    } else {
      feeder.jump_to(static_cast<int64_t>(start_at));
    }
    streamed += p.S;  // the warm-up step of time_steps
    out.bounded.push_back({length, time_steps(layer, feeder, p.repeats), streamed});
    streamed += uint64_t{p.repeats} * p.S;
    const double ms = out.bounded.back().ms_per_step;
    std::fprintf(stderr, "attendre-bench: bounded at %llu positions: %.2f ms/step\n",
                 static_cast<unsigned long long>(length), ms);
  }
}

// Dense: for each length C, a layer holding C entries (M a little above C
// so the timed steps evict nothing, K = M: attention over every entry,
// fifo: no scores to keep). N = C makes queries wait until the memory is
// full, so filling it costs insertions only; N changes no kernel's cost.
void dense_series(attendre::Context& context, const Plan& p, Scaling& out) {
  const auto start = Clock::now();
  double last_ms = 0.0;
  uint64_t last_length = 0;
  for (uint64_t length : p.lengths) {
    // Dense cost grows linearly with the length: stop before a point that would overrun the budget.
    const double projected_s = last_length ? last_ms * 1e-3 * (p.repeats + 1) * static_cast<double>(length) / static_cast<double>(last_length) : 0.0;
    if (last_length && seconds_since(start) + projected_s > p.dense_budget_s) {
      out.dense_stopped = "stopped before " + std::to_string(length) + " positions: about " +
                          std::to_string(static_cast<int>(projected_s)) + " s more would pass the " +
                          std::to_string(static_cast<int>(p.dense_budget_s)) + " s budget of the dense series";
      return;
    }
    const uint64_t M = length + uint64_t{p.S} * (p.repeats + 2);
    try {
      if (M > 0x7FFFFFFFu) attendre::fail(attendre::ErrorCode::unsupported, "a memory of " + std::to_string(M) + " entries");
      const uint32_t m = static_cast<uint32_t>(M);
      // Dense attention proper (N = 0) must fit the device first, so that a
      // refusal names the dense memory's own limit, not the filling trick's.
      { (void)attendre::gpu::Layer::create(context, config(p, m, 0, m, attendre::Policy::fifo())).value_or_throw(); }
      std::unique_ptr<attendre::gpu::Layer> filled;
      try {
        filled = attendre::gpu::Layer::create(
            context, config(p, m, static_cast<uint32_t>(length), m, attendre::Policy::fifo())).value_or_throw();
      } catch (const attendre::Error& e) {
        if (e.code() != attendre::ErrorCode::unsupported && e.code() != attendre::ErrorCode::out_of_device_memory) throw;
        out.dense_stopped = "stopped at " + std::to_string(length) + " positions: dense attention fits, but the Q memory of N = " +
                            std::to_string(length) + " rows that fills it without retrieving does not (" + e.what() +
                            "), and filling with N = 0 costs time quadratic in the length";
        return;
      }
      attendre::gpu::Layer& layer = *filled;
      LayerFeeder feeder(p.shape, p.S, 13);
      attendre::StepRequest quiet;
      quiet.outputs = false;
      for (uint64_t i = 0; i < length / p.S; ++i) layer.step(feeder.next(), quiet).value_or_throw();
      last_ms = time_steps(layer, feeder, p.repeats);
      last_length = length;
      out.dense.push_back({length, last_ms, length + p.S});
      std::fprintf(stderr, "attendre-bench: dense at %llu positions: %.2f ms/step\n",
                   static_cast<unsigned long long>(length), last_ms);
    } catch (const attendre::Error& e) {
      if (e.code() != attendre::ErrorCode::unsupported && e.code() != attendre::ErrorCode::out_of_device_memory) throw;
      out.dense_stopped = "stopped at " + std::to_string(length) + " positions: " + e.what();
      return;
    }
  }
}

}  // namespace

void run_scaling(attendre::Context& context, const Options& options, Results& results) {
  if (!options.filter.scaling()) return;
  const Plan p = plan(options.quick);
  Scaling s;
  s.S = p.S;
  s.M = p.M;
  s.K = p.K;
  s.N = p.N;
  s.heads_q = p.shape.heads_q;
  s.heads_kv = p.shape.heads_kv;
  s.head_dim = p.shape.head_dim;
  bounded_series(context, p, s);
  dense_series(context, p, s);
  for (const ScalingPoint& d : s.dense) {
    for (const ScalingPoint& b : s.bounded) {
      if (b.positions == d.positions && d.ms_per_step > b.ms_per_step) s.crossover = d.positions;
    }
    if (s.crossover) break;
  }
  results.scaling = std::move(s);
}

}  // namespace bench
