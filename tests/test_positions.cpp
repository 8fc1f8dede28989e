// Position encodings (core/positions): T5's buckets against values worked
// out by hand from mesh_tensorflow's _relative_position_bucket, LM-Infinite's
// capped distance, the configuration checks; and the GPU layer against the
// float64 reference with T5 biases, bidirectional and causal, past the
// saturation distance.
#include "core/positions.hpp"
#include "support.hpp"

#include <attendre/error.hpp>
#include <attendre/gpu.hpp>
#include <attendre/reference/layer.hpp>
#include <attendre/stack.hpp>

#include <doctest/doctest.h>

#include <cmath>
#include <random>

using namespace attendre;

TEST_CASE("positions: T5 buckets equal the reference bucketing, exact on the boundaries") {
  T5Buckets bidirectional;  // 32 buckets, max_distance 128: 16 per side, 8 exact
  // relative = p_key - p_query; keys before the query (n = -relative > 0)
  // take the lower half: n < 8 exactly, then 8 + floor(2 log2(n / 8)).
  const std::pair<int64_t, uint32_t> past[] = {{0, 0},   {-1, 1},   {-7, 7},   {-8, 8},     {-15, 9},    {-16, 10},
                                               {-31, 11}, {-32, 12}, {-63, 13}, {-64, 14},  {-127, 15},  {-128, 15},
                                               {-1000, 15}, {-(int64_t{1} << 40), 15}};
  for (auto [relative, bucket] : past) {
    INFO("relative " << relative);
    CHECK(positions::t5_bucket(relative, bidirectional) == bucket);
    if (relative != 0) CHECK(positions::t5_bucket(-relative, bidirectional) == bucket + 16);  // keys after it
  }
  T5Buckets causal;  // 32 buckets on one side, 16 exact: 16 + floor(16 / 3 * log2(n / 16))
  causal.bidirectional = false;
  const std::pair<int64_t, uint32_t> decoder[] = {{5, 0},    {0, 0},    {-15, 15}, {-16, 16}, {-20, 17},
                                                  {-32, 21}, {-64, 26}, {-127, 31}, {-128, 31}, {-5000, 31}};
  for (auto [relative, bucket] : decoder) {
    INFO("causal relative " << relative);
    CHECK(positions::t5_bucket(relative, causal) == bucket);
  }
  // Off the boundaries, float32 agrees with the real-valued formula.
  for (int64_t n = 8; n < 300; ++n) {
    const double real = 8.0 + std::log(static_cast<double>(n) / 8.0) / std::log(16.0) * 8.0;
    if (std::abs(real - std::round(real)) < 1e-4) continue;
    CHECK(positions::t5_bucket(-n, bidirectional) == std::min<uint32_t>(static_cast<uint32_t>(real), 15));
  }
  // The device's table: every relative position -R..R, ends saturated.
  const std::vector<uint32_t> table = positions::t5_bucket_table(bidirectional).value_or_throw();
  REQUIRE(table.size() == 257);
  CHECK(table[128 - 16] == 10);
  CHECK(table[128 + 16] == 26);
}

TEST_CASE("positions: LM-Infinite caps distances on both sides, sinks at +n_local") {
  using positions::lm_infinite_distance;
  CHECK(lm_infinite_distance(0, 4, false) == 0);
  CHECK(lm_infinite_distance(4, 4, false) == 4);
  CHECK(lm_infinite_distance(-4, 4, false) == -4);
  CHECK(lm_infinite_distance(5, 4, false) == 4);
  CHECK(lm_infinite_distance(-5, 4, false) == -4);  // a future key reached through the Q memory
  CHECK(lm_infinite_distance(-3, 4, true) == -3);   // a sink within reach keeps its position
  CHECK(lm_infinite_distance(-9, 4, true) == 4);    // beyond: position zero against the maximum
  CHECK(lm_infinite_distance(9, 4, true) == 4);
}

TEST_CASE("positions: configurations are checked with one-line messages") {
  LayerConfig c;
  c.shape = {2, 1, 8};
  c.chunk = 2;
  c.kv.capacity = 8;
  c.retrieval.top_k = 4;
  c.retrieval.bias = BiasKind::t5;
  c.retrieval.t5.num_buckets = 3;
  c.retrieval.t5.table.assign(6, 0.0f);
  CHECK_THROWS_WITH_AS(c.check().or_throw(), doctest::Contains("t5 needs at least 4 buckets"), Error);
  c.retrieval.t5.num_buckets = 8;
  CHECK_THROWS_WITH_AS(c.check().or_throw(), doctest::Contains("expected num_buckets * heads_q = 16"), Error);
  c.retrieval.t5.table.clear();
  CHECK_THROWS_WITH_AS(reference::Layer{c}, doctest::Contains("t5 bias table holds 0 values"), Error);
  c.retrieval.t5.max_distance = 2;
  CHECK_THROWS_WITH_AS(c.check().or_throw(), doctest::Contains("t5 max_distance must exceed"), Error);

  StackConfig s;
  s.hidden = 8;
  s.chunk = 2;
  BlockConfig b;
  b.attention.shape = {2, 1, 8};
  b.attention.kv.capacity = 8;
  b.attention.retrieval.top_k = 4;
  s.blocks = {b};
  s.blocks[0].lm_infinite.enabled = true;
  CHECK_THROWS_WITH_AS(s.check().or_throw(), doctest::Contains("LM-Infinite n_local must be in [1, 2^31)"), Error);
  s.blocks[0].rope = false;
  s.blocks[0].lm_infinite.n_local = 16;
  CHECK_THROWS_WITH_AS(s.check().or_throw(), doctest::Contains("LM-Infinite caps RoPE distances: it needs rope"), Error);
  s.blocks[0] = b;
  s.blocks[0].rope_scaling.kind = RopeScaling::Kind::llama3;
  s.blocks[0].rope_scaling.factor = 8.0;
  s.blocks[0].rope_scaling.high_freq_factor = 1.0;
  CHECK_THROWS_WITH_AS(s.check().or_throw(), doctest::Contains("0 < low_freq_factor < high_freq_factor"), Error);
  s.blocks[0] = b;
  s.blocks[0].attention.retrieval.bias = BiasKind::t5;
  s.blocks[0].t5_table_block = 1;
  CHECK_THROWS_WITH_AS(s.check().or_throw(), doctest::Contains("t5_table_block must name a t5 block"), Error);
}

namespace {

LayerConfig t5_layer(bool bidirectional, uint64_t seed) {
  LayerConfig c;
  c.shape = {4, 2, 16};
  c.chunk = 5;
  c.q_capacity = 7;
  c.kv.capacity = 17;
  c.kv.n_sink = 2;
  c.kv.policy = Policy::lra_sum();
  c.retrieval.top_k = 6;
  c.retrieval.causal = !bidirectional;
  c.retrieval.bias = BiasKind::t5;
  c.retrieval.t5.num_buckets = 16;
  c.retrieval.t5.max_distance = 20;
  c.retrieval.t5.bidirectional = bidirectional;
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> bias(0.0f, 1.5f);
  for (uint32_t i = 0; i < 16 * 4; ++i) c.retrieval.t5.table.push_back(bias(rng));
  return c;
}

}  // namespace

TEST_CASE("gpu layer matches reference across T5 buckets: bidirectional and causal, past max_distance") {
  // Positions advance by up to 4, so keys range past max_distance = 20 and
  // into the saturated buckets on both sides of each waiting query.
  uint64_t seed = 9500;
  for (bool bidirectional : {true, false}) {
    INFO("bidirectional " << bidirectional);
    const LayerConfig config = t5_layer(bidirectional, ++seed);
    test::StreamOptions options;
    options.invalid_fraction = 0.1;
    options.max_position_gap = 4;
    for (int attempt = 0;; ++attempt) {
      const test::Stream stream = test::random_stream(config.shape, 60, seed * 977 + attempt, options);
      reference::Layer cpu(config);
      const auto expected = test::run_stream(cpu, stream);
      if (cpu.kv_memory().min_decision_gap() < 2e-5 && attempt < 7) continue;
      auto device_owner = gpu::Layer::create(test::gpu(), config).value_or_throw();
      gpu::Layer& device = *device_owner;
      test::check_runs_match(expected, test::run_stream(device, stream), 2e-4, 2e-4, "t5");
      // Without the bias the outputs move far past the tolerance: the
      // comparison above would have seen a bias that went missing.
      LayerConfig plain = config;
      plain.retrieval.bias = BiasKind::none;
      reference::Layer unbiased(plain);
      const auto other = test::run_stream(unbiased, stream);
      double gap = 0.0;
      for (size_t i = 0; i < other.size(); ++i)
        for (size_t j = 0; j < other[i].outputs.size(); ++j)
          gap = std::max(gap, static_cast<double>(std::abs(other[i].outputs[j] - expected[i].outputs[j])));
      CHECK(gap > 1e-2);
      break;
    }
  }
  test::check_no_validation_messages(test::gpu());
}
