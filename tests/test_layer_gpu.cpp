// The GPU layer against the float64 reference on randomized streams: every
// policy x {MHA, GQA, MQA} x {N = 0, N = S, N not a multiple of S} x
// {K < M, K = M} x {sinks, protect_new off, causal}, with invalid rows;
// sliding-window masks and soft-capped logits on each retrieval path.
// Retained positions must be equal at every step; scores and outputs agree
// to fp32 tolerance.
#include "support.hpp"

#include <attendre/gpu.hpp>
#include <attendre/reference/layer.hpp>

#include <doctest/doctest.h>

#include <sstream>

using namespace attendre;

namespace {

// fp32 logits and weights carry ~1e-6 relative error; a stream whose
// reference decisions hinge on a smaller gap is drawn again.
constexpr double kMinGap = 2e-5;

struct Case {
  LayerConfig config;
  uint32_t rows = 50;
  test::StreamOptions stream;
  bool flush = false;
};

std::string describe(const Case& c) {
  const LayerConfig& k = c.config;
  std::ostringstream s;
  s << to_string(k.kv.policy.kind) << " Hq=" << k.shape.heads_q << " Hkv=" << k.shape.heads_kv
    << " D=" << k.shape.head_dim << " S=" << k.chunk << " N=" << k.q_capacity << " M=" << k.kv.capacity
    << " K=" << k.retrieval.top_k << " sinks=" << k.kv.n_sink << " protect_new=" << k.kv.protect_new
    << " causal=" << k.retrieval.causal << " mode=" << to_string(k.retrieval.mode) << " window=" << k.retrieval.window
    << " soft_cap=" << k.retrieval.soft_cap << " T=" << c.rows;
  return s.str();
}

// Runs the case on the CPU reference and on `context`, redrawing streams
// whose decisions are closer than fp32 can resolve.
void check_case(Context& context, const Case& c, uint64_t seed) {
  for (int attempt = 0; attempt < 8; ++attempt) {
    const test::Stream stream = test::random_stream(c.config.shape, c.rows, seed * 977 + attempt, c.stream);
    reference::Layer cpu(c.config);
    const auto expected = test::run_stream(cpu, stream, c.flush);
    if (cpu.kv_memory().min_decision_gap() < kMinGap && attempt < 7) continue;
    auto device_owner = gpu::Layer::create(context, c.config).value_or_throw();
    gpu::Layer& device = *device_owner;
    const auto actual = test::run_stream(device, stream, c.flush);
    test::check_runs_match(expected, actual, 2e-4, 2e-4, describe(c));
    test::check_no_validation_messages(context);
    return;
  }
}

Policy policy_of(PolicyKind kind) {
  switch (kind) {
    case PolicyKind::lfa: return Policy::lfa(0.05);
    case PolicyKind::lra_max: return Policy::lra_max(InitialScore::mean_minus_sigma(1.5));
    default: return Policy{kind, 0.0, {}};
  }
}

void check_policy_matrix(PolicyKind kind) {
  const AttentionShape layouts[] = {{4, 4, 16}, {4, 2, 20}, {3, 1, 16}};  // MHA, GQA, MQA
  const uint32_t S = 4;
  const uint32_t q_capacities[] = {0, S, 6};
  const uint32_t M = 13;
  uint64_t seed = static_cast<uint64_t>(kind) * 1000;
  for (const AttentionShape& shape : layouts)
    for (uint32_t N : q_capacities)
      for (uint32_t K : {5u, M})
        for (int variant = 0; variant < 3; ++variant) {
          Case c;
          c.config.shape = shape;
          c.config.chunk = S;
          c.config.q_capacity = N;
          c.config.kv.capacity = M;
          c.config.kv.policy = policy_of(kind);
          c.config.retrieval.top_k = K;
          c.stream.invalid_fraction = 0.15;
          if (variant == 0) c.config.kv.n_sink = 4;
          if (variant == 1) c.config.kv.protect_new = false;
          if (variant == 2) c.config.retrieval.causal = true;
          check_case(test::gpu(), c, ++seed);
        }
}

}  // namespace

TEST_CASE("gpu layer matches reference: fifo") { check_policy_matrix(PolicyKind::fifo); }
TEST_CASE("gpu layer matches reference: lru") { check_policy_matrix(PolicyKind::lru); }
TEST_CASE("gpu layer matches reference: lfu") { check_policy_matrix(PolicyKind::lfu); }
TEST_CASE("gpu layer matches reference: lra_last") { check_policy_matrix(PolicyKind::lra_last); }
TEST_CASE("gpu layer matches reference: lra_max") { check_policy_matrix(PolicyKind::lra_max); }
TEST_CASE("gpu layer matches reference: lra_sum") { check_policy_matrix(PolicyKind::lra_sum); }
TEST_CASE("gpu layer matches reference: lfa") { check_policy_matrix(PolicyKind::lfa); }

TEST_CASE("gpu layer matches reference: shared retrieval, tags, alibi, constant initial score") {
  uint64_t seed = 9000;
  for (PolicyKind kind : {PolicyKind::lru, PolicyKind::lra_sum, PolicyKind::lfa}) {
    Case c;
    c.config.shape = {4, 2, 16};
    c.config.chunk = 5;
    c.config.q_capacity = 7;
    c.config.kv.capacity = 17;
    c.config.kv.policy = policy_of(kind);
    c.config.retrieval.top_k = 6;
    c.stream.invalid_fraction = 0.1;
    SUBCASE("shared") { c.config.retrieval.mode = RetrievalMode::shared; }
    SUBCASE("tag mask") {
      c.config.retrieval.tag_mask = true;
      c.stream.tag_values = 3;
    }
    SUBCASE("alibi with position gaps") {
      c.config.retrieval.bias = BiasKind::alibi;
      c.stream.max_position_gap = 3;
      c.stream.first_position = 100;
    }
    SUBCASE("constant initial score, scale, flush") {
      c.config.kv.policy.initial = InitialScore::constant(0.25);
      c.config.retrieval.scale = 0.3;
      c.flush = true;
    }
    check_case(test::gpu(), c, ++seed);
  }
}

TEST_CASE("gpu layer matches reference across select, score and attend tiles") {
  // tiny_gpu(): 32 invocations and 64-entry select tiles, so M = 150 spans
  // three tiles and the merge runs; D = 40 spans score's 16-wide slices.
  uint64_t seed = 7000;
  for (PolicyKind kind : {PolicyKind::fifo, PolicyKind::lru, PolicyKind::lra_last, PolicyKind::lfa}) {
    Case c;
    c.config.shape = {4, 2, 40};
    c.config.chunk = 16;
    c.config.q_capacity = 21;
    c.config.kv.capacity = 150;
    c.config.kv.n_sink = 2;
    c.config.kv.policy = policy_of(kind);
    c.config.retrieval.top_k = 19;
    c.rows = 260;
    c.stream.invalid_fraction = 0.05;
    check_case(test::tiny_gpu(), c, ++seed);
  }
}

TEST_CASE("gpu layer matches reference with quantized inputs: exact ties break by position") {
  // Values in multiples of 1/4 make fp32 dot products exact: logits and
  // lfu/lru scores tie often, and both sides must break ties identically.
  uint64_t seed = 8000;
  for (PolicyKind kind : {PolicyKind::fifo, PolicyKind::lru, PolicyKind::lfu}) {
    for (bool protect : {true, false}) {
      Case c;
      c.config.shape = {2, 1, 16};
      c.config.chunk = 4;
      c.config.q_capacity = 3;
      c.config.kv.capacity = 9;
      c.config.kv.protect_new = protect;
      c.config.kv.policy = policy_of(kind);
      c.config.retrieval.top_k = 3;
      c.stream.quantized = true;
      c.stream.invalid_fraction = 0.1;
      check_case(test::gpu(), c, ++seed);
    }
  }
}

TEST_CASE("gpu layer matches reference with a memory spanning several score_stats workgroups") {
  // tiny_gpu(): 32 invocations, so score_stats reduces 512 slots per
  // workgroup and M = 1100 takes three, merged by the combining pass; the
  // initial scores of lra_sum and lfa then decide every eviction.
  uint64_t seed = 9100;
  for (PolicyKind kind : {PolicyKind::lra_sum, PolicyKind::lfa}) {
    Case c;
    c.config.shape = {4, 2, 8};
    c.config.chunk = 16;
    c.config.q_capacity = 0;
    c.config.kv.capacity = 1100;
    c.config.kv.n_sink = 3;
    c.config.kv.policy = policy_of(kind);
    c.config.retrieval.top_k = 8;
    c.rows = 1300;
    c.stream.invalid_fraction = 0.05;
    check_case(test::tiny_gpu(), c, ++seed);
  }
}

TEST_CASE("gpu layer matches reference: sliding-window masks and soft-capped logits on the flash, score and select paths") {
  // fifo at K = M retrieves through flash_attend; K < M and the attention-
  // scored policies through score, select and attend, whose weights the
  // policies read. Caps near the logits' own size bend them (tanh is far
  // from linear there); windows shorter than M hide keys the memory holds,
  // at chunk sizes below, at and above the window. tiny_gpu(): M = 150
  // spans three select tiles and D = 40 score's 16-wide slices.
  struct Variant {
    Context* context;
    PolicyKind kind;
    AttentionShape shape;
    uint32_t S, N, M, K, window;
    double cap;
    bool causal;
    uint32_t rows;
  };
  const Variant variants[] = {
      {&test::gpu(), PolicyKind::fifo, {4, 2, 16}, 4, 0, 13, 13, 5, 0.6, true, 50},
      {&test::gpu(), PolicyKind::fifo, {4, 4, 16}, 1, 0, 7, 7, 7, 0.4, true, 40},
      {&test::gpu(), PolicyKind::fifo, {3, 1, 16}, 9, 0, 20, 20, 6, 0.0, true, 60},
      {&test::gpu(), PolicyKind::lra_sum, {4, 2, 20}, 5, 3, 17, 6, 7, 0.5, false, 60},
      {&test::gpu(), PolicyKind::lfa, {4, 2, 16}, 4, 0, 13, 13, 0, 0.3, true, 50},
      {&test::tiny_gpu(), PolicyKind::fifo, {4, 2, 40}, 16, 0, 150, 150, 40, 1.0, true, 260},
      {&test::tiny_gpu(), PolicyKind::lra_last, {4, 2, 40}, 16, 21, 150, 19, 40, 1.0, true, 260},
  };
  uint64_t seed = 11000;
  for (const Variant& v : variants) {
    Case c;
    c.config.shape = v.shape;
    c.config.chunk = v.S;
    c.config.q_capacity = v.N;
    c.config.kv.capacity = v.M;
    c.config.kv.policy = policy_of(v.kind);
    c.config.retrieval.top_k = v.K;
    c.config.retrieval.causal = v.causal;
    c.config.retrieval.window = v.window;
    c.config.retrieval.soft_cap = v.cap;
    c.rows = v.rows;
    c.stream.invalid_fraction = 0.1;
    check_case(*v.context, c, ++seed);
  }
}
