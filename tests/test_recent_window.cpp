// The recent window (KvMemoryConfig::n_recent, docs/spec-notes.md "Recent
// window"): the reference keeps every position within W of the newest, the
// GPU layer and stack match the reference on every policy (with sinks,
// protect_new off, S > W and S < W, memories crossing select tiles), and
// infeasible windows are refused at creation on both backends.
#include "stack_support.hpp"
#include "support.hpp"

#include <attendre/error.hpp>
#include <attendre/gpu.hpp>
#include <attendre/gpu_stack.hpp>
#include <attendre/reference/layer.hpp>
#include <attendre/reference/stack.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <sstream>

using namespace attendre;

namespace {

constexpr double kMinGap = 2e-5;  // as test_layer_gpu.cpp: fp32 cannot resolve closer decisions

constexpr PolicyKind kPolicies[] = {PolicyKind::fifo,    PolicyKind::lru,     PolicyKind::lfu, PolicyKind::lra_last,
                                    PolicyKind::lra_max, PolicyKind::lra_sum, PolicyKind::lfa};

Policy policy_of(PolicyKind kind) {
  if (kind == PolicyKind::lfa) return Policy::lfa(0.02);
  return Policy{kind, 0.0, {}};
}

std::string describe(const LayerConfig& k, uint32_t rows) {
  std::ostringstream s;
  s << to_string(k.kv.policy.kind) << " S=" << k.chunk << " N=" << k.q_capacity << " M=" << k.kv.capacity
    << " K=" << k.retrieval.top_k << " sinks=" << k.kv.n_sink << " W=" << k.kv.n_recent
    << " protect_new=" << k.kv.protect_new << " T=" << rows;
  return s.str();
}

// Every valid position inserted up to each step that lies within W of the
// newest is held in that step's snapshot (drain steps insert nothing).
void check_window_held(const LayerConfig& c, const test::Stream& s, const std::vector<test::StepRecord>& records) {
  for (size_t t = 0; t < records.size(); ++t) {
    const uint32_t end = static_cast<uint32_t>(std::min<uint64_t>(s.rows, (t + 1) * uint64_t{c.chunk}));
    std::vector<int64_t> inserted;
    for (uint32_t r = 0; r < end; ++r)
      if (s.valid[r]) inserted.push_back(s.positions[r]);
    if (inserted.empty()) continue;
    const std::vector<int64_t>& held = records[t].snapshot.positions;
    for (int64_t p : inserted)
      if (in_recent_window(p, inserted.back(), c.kv.n_recent))
        CHECK_MESSAGE(std::binary_search(held.begin(), held.end(), p),
                      "step " << t << ": recent position " << p << " was evicted");
  }
}

struct Run {
  test::Stream stream;
  std::vector<test::StepRecord> records;
};

// The reference run of the first stream whose decisions fp32 can resolve.
Run reference_run(const LayerConfig& c, uint32_t rows, const test::StreamOptions& options, uint64_t seed) {
  for (int attempt = 0;; ++attempt) {
    Run run{test::random_stream(c.shape, rows, seed * 977 + attempt, options), {}};
    reference::Layer cpu(c);
    run.records = test::run_stream(cpu, run.stream);
    if (cpu.kv_memory().min_decision_gap() >= kMinGap || attempt == 7) return run;
  }
}

// The reference with the window, then the GPU layer on `context` against it.
void check_case(Context& context, const LayerConfig& c, uint32_t rows, const test::StreamOptions& options,
                uint64_t seed) {
  const std::string label = describe(c, rows);
  INFO(label);
  const Run run = reference_run(c, rows, options, seed);
  check_window_held(c, run.stream, run.records);
  auto device_owner = gpu::Layer::create(context, c).value_or_throw();
  gpu::Layer& device = *device_owner;
  test::check_runs_match(run.records, test::run_stream(device, run.stream), 2e-4, 2e-4, label);
  test::check_no_validation_messages(context);

  // fifo evicts the oldest first, never a recent entry: the window changes
  // nothing. Every other policy keeps something else at some step.
  LayerConfig without = c;
  without.kv.n_recent = 0;
  reference::Layer plain(without);
  const auto plain_records = test::run_stream(plain, run.stream);
  bool differs = false;
  for (size_t t = 0; t < plain_records.size(); ++t)
    differs = differs || plain_records[t].snapshot.positions != run.records[t].snapshot.positions;
  if (c.kv.policy.kind == PolicyKind::fifo) CHECK_FALSE(differs);
}

LayerConfig base(PolicyKind kind) {
  LayerConfig c;
  c.shape = {4, 2, 8};
  c.chunk = 4;
  c.q_capacity = 3;
  c.kv.capacity = 13;
  c.kv.policy = policy_of(kind);
  c.kv.n_recent = 5;
  c.retrieval.top_k = 4;
  return c;
}

}  // namespace

TEST_CASE("recent window: the GPU layer keeps the reference's retained sets on every policy") {
  uint64_t seed = 31000;
  test::StreamOptions options;
  options.invalid_fraction = 0.15;
  for (PolicyKind kind : kPolicies) {
    {
      LayerConfig c = base(kind);  // W > S
      check_case(test::gpu(), c, 48, options, ++seed);
    }
    {
      LayerConfig c = base(kind);  // sinks and the window together, N = 0, full attention
      c.kv.n_sink = 3;
      c.kv.n_recent = 6;
      c.q_capacity = 0;
      c.retrieval.top_k = c.kv.capacity;
      check_case(test::gpu(), c, 48, options, ++seed);
    }
    {
      LayerConfig c = base(kind);  // new rows compete, the window still protects
      c.kv.protect_new = false;
      c.kv.n_sink = 2;
      c.kv.n_recent = 7;
      check_case(test::gpu(), c, 48, options, ++seed);
    }
    {
      LayerConfig c = base(kind);  // S > W: part of each chunk lies outside the window
      c.chunk = 6;
      c.kv.n_recent = 2;
      c.kv.protect_new = false;
      test::StreamOptions gaps = options;
      gaps.max_position_gap = 3;  // fewer than W entries lie in a window with gaps
      gaps.first_position = -5;
      check_case(test::gpu(), c, 50, gaps, ++seed);
    }
  }
}

TEST_CASE("recent window: a memory crossing select tiles matches the reference (tiny limits)") {
  // tiny_gpu(): 64-entry select tiles, so M = 150 spans three tiles; the
  // window (70) spans more than one tile too.
  uint64_t seed = 32000;
  test::StreamOptions options;
  options.invalid_fraction = 0.05;
  for (PolicyKind kind : {PolicyKind::lru, PolicyKind::lra_sum, PolicyKind::lfa}) {
    LayerConfig c;
    c.shape = {2, 1, 16};
    c.chunk = 16;
    c.q_capacity = 5;
    c.kv.capacity = 150;
    c.kv.n_sink = 2;
    c.kv.n_recent = 70;
    c.kv.policy = policy_of(kind);
    c.retrieval.top_k = 9;
    check_case(test::tiny_gpu(), c, 260, options, ++seed);
  }
}

TEST_CASE("recent window: the GPU stack equals the reference stack step by step") {
  const test::TokenStream s = test::random_tokens(53, 29, 31, 0.05);
  for (const Policy& policy : {Policy::lfa(0.0), Policy::lra_last(), Policy::lfu()}) {
    INFO(to_string(policy.kind));
    StackConfig c = test::small_stack(2, {4, 2, 6}, 5, 3, 14, 5, policy);
    c.blocks[0].attention.kv.n_recent = 7;
    c.blocks[1].attention.kv.n_recent = 4;
    c.blocks[1].attention.kv.n_sink = 2;
    RandomWeights weights(77);
    reference::Stack cpu(c, weights);
    auto device_owner = gpu::Stack::create(test::gpu(), c, weights).value_or_throw();
    gpu::Stack& device = *device_owner;
    StackRequest request;
    for (uint32_t first = 0, step = 0; first < s.rows(); first += c.chunk, ++step) {
      const StackChunk chunk = s.chunk(first, std::min(c.chunk, s.rows() - first));
      const StackOutput e = cpu.step(chunk, request).value_or_throw(), a = device.step(chunk, request).value_or_throw();
      INFO("step " << step);
      REQUIRE(e.positions == a.positions);
      for (uint32_t l = 0; l < c.blocks.size(); ++l) CHECK(cpu.snapshot(l).value_or_throw().positions == device.snapshot(l).value_or_throw().positions);
      for (size_t i = 0; i < e.hidden.size(); ++i)
        CHECK(a.hidden[i] == doctest::Approx(e.hidden[i]).epsilon(1e-3).scale(1.0));
    }
    test::check_no_validation_messages(test::gpu());
  }
}

TEST_CASE("recent window: a window the memory cannot hold is refused at creation on both backends") {
  LayerConfig c = base(PolicyKind::lfa);
  c.kv.n_sink = 3;
  c.kv.n_recent = 11;  // 3 + 11 > 13
  const auto refused = [](const LayerConfig& config, const std::string& part) {
    const Status status = config.check();
    CHECK(status.code() == ErrorCode::infeasible_config);
    CHECK_MESSAGE(status.message().find(part) != std::string::npos, status.message());
    CHECK_THROWS_AS(reference::Layer{config}, Error);
    CHECK_FALSE(gpu::Layer::create(test::gpu(), config).ok());
  };
  refused(c, "M >= n_sink + max(S, W)");
  c.kv.n_recent = 10;  // exactly M = n_sink + W
  CHECK(c.check().ok());
  c.kv.n_recent = 2;
  c.chunk = 11;  // under protect_new the chunk counts when it is the larger
  refused(c, "W=2");
  c.kv.protect_new = false;  // then only the window does
  CHECK(c.check().ok());
  c.kv.n_recent = 11;
  refused(c, "M >= n_sink + W,");
}
