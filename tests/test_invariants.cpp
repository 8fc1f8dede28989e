// Spec section 4 invariants and the named equivalences of spec 2.4, checked
// on the float64 reference and on the GPU against independent dense
// attention and independent simulations of the published policies.
#include "dense_attention.hpp"
#include "support.hpp"

#include <attendre/gpu.hpp>
#include <attendre/reference/layer.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <functional>
#include <memory>

using namespace attendre;

namespace {

using Factory = std::function<std::unique_ptr<AttendreLayer>(const LayerConfig&)>;

std::vector<std::pair<const char*, Factory>> backends() {
  return {{"reference", [](const LayerConfig& c) { return std::make_unique<reference::Layer>(c); }},
          {"gpu", [](const LayerConfig& c) { return gpu::Layer::create(test::gpu(), c).value_or_throw(); }}};
}

// Emitted outputs of every step, keyed by input row.
std::vector<std::vector<double>> outputs_by_row(const test::Stream& s, const std::vector<test::StepRecord>& steps) {
  std::vector<std::vector<double>> rows(s.rows);
  const uint32_t q_row = s.shape.q_row();
  for (const test::StepRecord& step : steps)
    for (size_t i = 0; i < step.emitted.size(); ++i) {
      const auto row = static_cast<uint32_t>(std::find(s.positions.begin(), s.positions.end(), step.emitted[i]) -
                                             s.positions.begin());
      rows[row].assign(step.outputs.begin() + i * q_row, step.outputs.begin() + (i + 1) * q_row);
    }
  return rows;
}

void check_close(const std::vector<double>& expected, const std::vector<double>& actual, double tolerance) {
  REQUIRE(expected.size() == actual.size());
  for (size_t i = 0; i < expected.size(); ++i) CHECK(actual[i] == doctest::Approx(expected[i]).epsilon(tolerance));
}

std::vector<uint32_t> valid_rows_where(const test::Stream& s, const std::function<bool(uint32_t)>& keep) {
  std::vector<uint32_t> rows;
  for (uint32_t r = 0; r < s.rows; ++r)
    if (s.valid[r] && keep(r)) rows.push_back(r);
  return rows;
}

}  // namespace

TEST_CASE("N = 0, causal, fifo, M >= T, K = M is ordinary causal attention") {
  test::StreamOptions options;
  options.invalid_fraction = 0.2;
  const test::Stream s = test::random_stream({4, 2, 12}, 29, 11, options);
  LayerConfig c;
  c.shape = s.shape;
  c.chunk = 5;
  c.q_capacity = 0;
  c.kv.capacity = 30;
  c.kv.policy = Policy::fifo();
  c.retrieval.top_k = 30;
  c.retrieval.causal = true;
  for (auto& [name, make] : backends()) {
    INFO(name);
    auto layer = make(c);
    const auto rows = outputs_by_row(s, test::run_stream(*layer, s));
    for (uint32_t r = 0; r < s.rows; ++r) {
      if (!s.valid[r]) {
        CHECK(rows[r].empty());
        continue;
      }
      check_close(test::dense_attention(s, r, valid_rows_where(s, [&](uint32_t j) { return j <= r; })), rows[r], 1e-4);
    }
  }
  test::check_no_validation_messages(test::gpu());
}

TEST_CASE("N >= T, M >= T, K = M, no mask is full bidirectional attention") {
  test::StreamOptions options;
  options.invalid_fraction = 0.2;
  const test::Stream s = test::random_stream({3, 3, 8}, 23, 12, options);
  LayerConfig c;
  c.shape = s.shape;
  c.chunk = 4;
  c.q_capacity = 23;
  c.kv.capacity = 24;
  c.kv.policy = Policy::lra_sum();
  c.retrieval.top_k = 24;
  const std::vector<uint32_t> all = valid_rows_where(s, [](uint32_t) { return true; });
  for (bool flush : {false, true})
    for (auto& [name, make] : backends()) {
      INFO(name << (flush ? " flush" : " drain"));
      auto layer = make(c);
      const auto rows = outputs_by_row(s, test::run_stream(*layer, s, flush));
      for (uint32_t r : all) check_close(test::dense_attention(s, r, all), rows[r], 1e-4);
    }
  test::check_no_validation_messages(test::gpu());
}

TEST_CASE("every valid position leaves the layer exactly once, in order, delayed by N") {
  test::StreamOptions options;
  options.invalid_fraction = 0.3;
  options.max_position_gap = 3;
  const test::Stream s = test::random_stream({2, 1, 8}, 41, 13, options);
  for (uint32_t N : {0u, 3u, 7u, 8u, 50u}) {
    LayerConfig c;
    c.shape = s.shape;
    c.chunk = 4;
    c.q_capacity = N;
    c.kv.capacity = 9;
    c.kv.policy = Policy::lru();
    c.retrieval.top_k = 3;
    for (auto& [name, make] : backends()) {
      INFO(name << " N=" << N);
      auto layer = make(c);
      const auto steps = test::run_stream(*layer, s);
      std::vector<int64_t> emitted;
      for (size_t t = 0; t < steps.size(); ++t)
        for (int64_t p : steps[t].emitted) {
          emitted.push_back(p);
          // Row r enters at step r / S and leaves once N later rows went in.
          const auto row = static_cast<uint32_t>(std::find(s.positions.begin(), s.positions.end(), p) - s.positions.begin());
          CHECK(t == (row + N) / c.chunk);
        }
      std::vector<int64_t> expected;
      for (uint32_t r : valid_rows_where(s, [](uint32_t) { return true; })) expected.push_back(s.positions[r]);
      CHECK(emitted == expected);
    }
  }
  test::check_no_validation_messages(test::gpu());
}

TEST_CASE("fifo is a sliding window and fifo with 4 sinks is StreamingLLM") {
  test::StreamOptions options;
  options.invalid_fraction = 0.15;
  const test::Stream s = test::random_stream({2, 2, 8}, 47, 14, options);
  for (uint32_t sinks : {0u, 4u}) {
    LayerConfig c;
    c.shape = s.shape;
    c.chunk = 3;
    c.q_capacity = 2;
    c.kv.capacity = 10;
    c.kv.n_sink = sinks;
    c.kv.policy = Policy::sliding_window();
    c.retrieval.top_k = 4;
    for (auto& [name, make] : backends()) {
      INFO(name << " sinks=" << sinks);
      auto layer = make(c);
      const auto steps = test::run_stream(*layer, s);
      std::vector<int64_t> inserted;
      for (size_t t = 0; t < steps.size(); ++t) {
        for (uint32_t r = uint32_t(t) * c.chunk; r < std::min(s.rows, uint32_t(t + 1) * c.chunk); ++r)
          if (s.valid[r]) inserted.push_back(s.positions[r]);
        // The pinned first positions, then the most recent ones.
        std::vector<int64_t> expected;
        for (int64_t p : inserted)
          if (p < int64_t(sinks)) expected.push_back(p);
        const size_t recent = std::min(inserted.size() - expected.size(), size_t(c.kv.capacity) - expected.size());
        expected.insert(expected.end(), inserted.end() - static_cast<std::ptrdiff_t>(recent), inserted.end());
        CHECK(steps[t].snapshot.positions == expected);
      }
    }
  }
  test::check_no_validation_messages(test::gpu());
}

namespace {

// TOVA (Oren et al.) and H2O heavy hitters (Zhang et al., without the recent
// window), one token per step: add the token, attend with its query, then
// drop the lowest-scored entry (older first on ties) while over `cache`.
struct CacheRun {
  std::vector<std::vector<int64_t>> held;  // after each token's attention, before the drop
  std::vector<std::vector<double>> outputs;
};

CacheRun simulate_cache_policy(const test::Stream& s, uint32_t cache, bool cumulative) {
  CacheRun run;
  std::vector<uint32_t> rows;
  std::vector<double> score;
  for (uint32_t t = 0; t < s.rows; ++t) {
    rows.push_back(t);
    score.push_back(0.0);
    std::vector<double> weight;
    run.outputs.push_back(test::dense_attention(s, t, rows, &weight));
    for (size_t i = 0; i < rows.size(); ++i) score[i] = cumulative ? score[i] + weight[i] : weight[i];
    std::vector<int64_t> held;
    for (uint32_t r : rows) held.push_back(s.positions[r]);
    run.held.push_back(held);
    if (rows.size() > cache) {
      const auto victim = std::min_element(score.begin(), score.end()) - score.begin();
      rows.erase(rows.begin() + victim);
      score.erase(score.begin() + victim);
    }
  }
  return run;
}

}  // namespace

TEST_CASE("lra_last is TOVA and lfa with lambda = 0 is H2O (one token per step)") {
  const test::Stream s = test::random_stream({4, 2, 8}, 40, 15);
  const uint32_t cache = 9;
  for (bool h2o : {false, true}) {
    const CacheRun expected = simulate_cache_policy(s, cache, h2o);
    LayerConfig c;
    c.shape = s.shape;
    c.chunk = 1;
    c.q_capacity = 0;
    // The memory holds the cache plus the new token, which is protected in
    // its step exactly as TOVA and H2O attend before they drop.
    c.kv.capacity = cache + 1;
    c.kv.policy = h2o ? Policy::lfa(0.0, InitialScore::constant(0.0)) : Policy::tova();
    c.retrieval.top_k = cache + 1;
    for (auto& [name, make] : backends()) {
      INFO(name << (h2o ? " h2o" : " tova"));
      auto layer = make(c);
      const auto steps = test::run_stream(*layer, s);
      REQUIRE(steps.size() == s.rows);
      for (uint32_t t = 0; t < s.rows; ++t) {
        CHECK(steps[t].snapshot.positions == expected.held[t]);
        check_close(expected.outputs[t], {steps[t].outputs.begin(), steps[t].outputs.end()}, 1e-4);
      }
    }
  }
  test::check_no_validation_messages(test::gpu());
}
