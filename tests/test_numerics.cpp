// Finite inputs give finite results or a clear error, never a silent NaN:
// parameters outside fp32 are refused, inputs whose logits or outputs would
// overflow fp32 are refused by both backends alike, initial scores are
// clamped to fp32 by both, subnormal inputs read as zero by both, and a
// non-finite value produced on the device is an Error naming the step and
// the stage. Also the pinning rule for negative positions (n_sink = 0 pins
// nothing).
#include "scaled_weights.hpp"
#include "stack_support.hpp"
#include "support.hpp"

#include <attendre/error.hpp>
#include <attendre/gpu.hpp>
#include <attendre/gpu_stack.hpp>
#include <attendre/reference/layer.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <functional>
#include <string>

namespace attendre {
namespace {

LayerConfig small_layer(PolicyKind kind) {
  LayerConfig c;
  c.shape = {2, 1, 8};
  c.chunk = 4;
  c.q_capacity = 4;
  c.kv.capacity = 8;
  c.kv.policy = Policy{kind, 0.0, {}};
  c.retrieval.top_k = 3;
  return c;
}

// The Error `run` throws (fails the test when it throws none).
Error error_of(const std::function<void()>& run) {
  try {
    run();
  } catch (const Error& e) {
    return e;
  }
  FAIL("no error was thrown");
  return Error(ErrorCode::invalid_argument, "");
}

bool has(const Error& e, const std::string& part) { return std::string(e.what()).find(part) != std::string::npos; }

TEST_CASE("numerics: parameters that leave the float32 range are refused, naming the parameter and the range") {
  LayerConfig c = small_layer(PolicyKind::lfa);
  c.retrieval.scale = 1e300;  // was inf on the device: NaN logits
  CHECK(has(error_of([&] { c.check().or_throw(); }), "scale is 1e+300"));
  c.retrieval.scale = 1e-45;  // a float32 subnormal: zero on many devices, not in the reference
  CHECK(has(error_of([&] { c.check().or_throw(); }), "[1.18e-38, 3.4e38]"));
  c.retrieval.scale = 0.125;
  c.kv.policy.lambda = 1e308;  // inf * 0 = NaN in the decay
  CHECK(has(error_of([&] { c.check().or_throw(); }), "lfa lambda is 1e+308"));
  c.kv.policy.lambda = 1e-3;
  c.kv.policy.initial.k = 1e308;
  CHECK(has(error_of([&] { c.check().or_throw(); }), "initial score k is 1e+308"));
  c.kv.policy.initial = InitialScore::constant(-1e39);
  CHECK(has(error_of([&] { c.check().or_throw(); }), "constant initial score"));
  c.kv.policy.initial = InitialScore::constant(-3e38);
  CHECK_NOTHROW(c.check().or_throw());
}

TEST_CASE("numerics: inputs whose logits or outputs overflow float32 are refused by both backends alike") {
  const LayerConfig config = small_layer(PolicyKind::lra_sum);
  test::Stream stream = test::random_stream(config.shape, 8, 91);
  for (size_t i = 16; i < 32; ++i) stream.q[i] = 3e19f;  // query row 1: |q_h| ~ 8.5e19
  for (size_t i = 0; i < 8; ++i) stream.k[i] = 2e19f;    // key row 0: |k| ~ 5.7e19, scale |q| |k| ~ 1.7e39 > 2^126
  reference::Layer cpu(config);
  auto device_owner = gpu::Layer::create(test::gpu(), config).value_or_throw();
  gpu::Layer& device = *device_owner;
  const Error on_cpu = error_of([&] { cpu.step(stream.chunk(0, 4)).value_or_throw(); });
  const Error on_gpu = error_of([&] { device.step(stream.chunk(0, 4)).value_or_throw(); });
  CHECK(std::string(on_cpu.what()) == on_gpu.what());
  CHECK(has(on_gpu, "chunk q row 1: scale * |q| * |k| reaches"));
  CHECK(has(on_gpu, "keeps float32 logits finite"));

  // Values beyond 2^126 could sum past the float32 range in attend.
  test::Stream values = test::random_stream(config.shape, 4, 92);
  values.v[5] = 2e38f;
  reference::Layer cpu2(config);
  CHECK(has(error_of([&] { cpu2.step(values.chunk(0, 4)).value_or_throw(); }), "chunk v row 0 holds |v| = 2e+38"));
  test::check_no_validation_messages(test::gpu());
}

TEST_CASE("numerics: initial scores whose k * sigma leaves float32 are clamped alike on both backends") {
  // Queries wait two chunks and chunks 2 and 3 are padding, so steps 4 and
  // 5 evict no valid query and their new entries keep their initial score:
  // at step 4, mu - k sigma over scores with sigma ~ 0.2 (-2e29 for k =
  // 1e30, -7e37 for k = 3e38); at step 5, sigma includes those, and for
  // k = 3e38, k sigma passes 3.4e38, where the device once stored -inf (and
  // NaN in the next statistics).
  for (double k : {1e30, 3e38}) {
    LayerConfig config = small_layer(PolicyKind::lra_sum);
    config.q_capacity = 8;
    config.kv.policy.initial = InitialScore::mean_minus_sigma(k);
    test::Stream stream = test::random_stream(config.shape, 32, 93);
    std::fill(stream.valid.begin() + 8, stream.valid.begin() + 16, uint8_t{0});
    reference::Layer cpu(config);
    auto device_owner = gpu::Layer::create(test::gpu(), config).value_or_throw();
    gpu::Layer& device = *device_owner;
    const auto expected = test::run_stream(cpu, stream);
    const auto actual = test::run_stream(device, stream);
    test::check_runs_match(expected, actual, 2e-4, 2e-4, "init k " + std::to_string(k));
    bool clamped = false;
    for (const auto& step : actual)
      for (double s : step.snapshot.scores) {
        CHECK(std::isfinite(s));
        clamped = clamped || s == -static_cast<double>(std::numeric_limits<float>::max());
      }
    if (k > 1e38) CHECK(clamped);  // the case really reached the clamp
  }
  test::check_no_validation_messages(test::gpu());
}

TEST_CASE("numerics: subnormal inputs read as zero on both backends, so retained sets agree") {
  // Queries of a few float32 subnormals: the reference once ranked keys by
  // 1e-39-sized logits while the device flushed them to zero (ties, broken
  // by position).
  for (PolicyKind kind : {PolicyKind::lra_sum, PolicyKind::lfu}) {
    const LayerConfig config = small_layer(kind);
    test::Stream stream = test::random_stream(config.shape, 40, 94);
    for (float& q : stream.q) q *= 1e-39f;
    for (size_t i = 0; i < stream.k.size(); i += 3) stream.k[i] *= 1e-39f;
    reference::Layer cpu(config);
    auto device_owner = gpu::Layer::create(test::gpu(), config).value_or_throw();
    gpu::Layer& device = *device_owner;
    test::check_runs_match(test::run_stream(cpu, stream), test::run_stream(device, stream), 2e-4, 2e-4,
                           std::string(to_string(kind)));
  }
  test::check_no_validation_messages(test::gpu());
}

// FFN weights whose gate and up projections (~1e21 each) multiply past
// float32 in the activation: the stack must report where, not hand out
// infinities or NaN as hidden states.
test::ScaledWeights huge_ffn_weights() { return test::ScaledWeights({"ffn_gate", "ffn_up"}, 1e21, 95); }

TEST_CASE("numerics: a non-finite value computed on the device is an error naming the step and the stage") {
  const StackConfig config = test::small_stack(2, {2, 1, 12}, 4, 0, 16, 16, Policy::lra_sum());
  test::ScaledWeights weights = huge_ffn_weights();
  auto stack_owner = gpu::Stack::create(test::gpu(), config, weights).value_or_throw();
  gpu::Stack& stack = *stack_owner;
  const test::TokenStream tokens = test::random_tokens(8, config.vocab, 96);
  StackRequest want;
  want.hidden = true;
  const Error e = error_of([&] {
    for (uint32_t first = 0; first < tokens.rows(); first += config.chunk) stack.step(tokens.chunk(first, 4), want).value_or_throw();
  });
  CHECK(e.code() == ErrorCode::numerical_error);
  CHECK(has(e, "step 0: non-finite values (NaN or infinity) in the output rows of block 0"));
  // As a value (errors as values, TransformerStack::step): the same code and message.
  auto again_owner = gpu::Stack::create(test::gpu(), config, weights).value_or_throw();
  gpu::Stack& again = *again_owner;
  const Result<StackOutput> failed = again.step(tokens.chunk(0, 4), want);
  REQUIRE(!failed.ok());
  CHECK(failed.status().code() == ErrorCode::numerical_error);
  CHECK(failed.status().message() == e.what());
  test::check_no_validation_messages(test::gpu());
}

// Embedding rows for a stack of `hidden` without a vocabulary: `steps`
// chunks of 4 rows, the first chunk's zeros (which every stage keeps zero,
// finite), the others' random (which overflow in the FFN of
// huge_ffn_weights), at positions 0, 1, ...
struct EmbeddingSteps {
  uint32_t hidden;
  std::vector<int64_t> positions;
  std::vector<float> rows;
  EmbeddingSteps(uint32_t hidden_size, uint32_t steps, uint64_t seed)
      : hidden(hidden_size), positions(4ull * steps), rows(4ull * steps * hidden_size, 0.0f) {
    for (size_t i = 0; i < positions.size(); ++i) positions[i] = static_cast<int64_t>(i);
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    for (size_t i = 4ull * hidden; i < rows.size(); ++i) rows[i] = u(rng);
  }
  StackChunk chunk(uint32_t step) const {
    StackChunk c;
    c.rows = 4;
    c.embeddings = std::span<const float>(rows).subspan(4ull * step * hidden, 4ull * hidden);
    c.positions = std::span<const int64_t>(positions).subspan(4ull * step, 4);
    return c;
  }
};

TEST_CASE("numerics: with two steps in flight, a non-finite value is reported for the step that computed it") {
  // Step 0 is finite, step 1 overflows in the FFN. Step 1 completes before
  // step 0's result is read, so checks shared by the two steps would blame
  // step 0 (and clear step 1's flag).
  StackConfig config = test::small_stack(1, {2, 1, 12}, 4, 0, 16, 16, Policy::lra_sum());
  config.vocab = 0;
  test::ScaledWeights weights = huge_ffn_weights();
  auto stack_owner = gpu::Stack::create(test::gpu(), config, weights).value_or_throw();
  gpu::Stack& stack = *stack_owner;
  const EmbeddingSteps steps(config.hidden, 5, 96);
  const Ticket first = stack.submit(steps.chunk(0)).value_or_throw();
  const Ticket second = stack.submit(steps.chunk(1)).value_or_throw();
  CHECK(second.wait().value_or_throw());
  StackOutput out;
  CHECK_NOTHROW(out = stack.result(first).value_or_throw());
  CHECK(out.positions.size() == 4);
  CHECK(std::all_of(out.hidden.begin(), out.hidden.end(), [](float x) { return x == 0.0f; }));
  const Error e = error_of([&] { stack.result(second).value_or_throw(); });
  CHECK(e.code() == ErrorCode::numerical_error);
  CHECK(has(e, "step 1: non-finite values (NaN or infinity) in the output rows of block 0"));
  // Steps 3 and 4 (slots 1 and 0) both overflow: a wait reports step 3,
  // the first of them, whichever slot it ran in (gpu::StepExecutor; the
  // layer's case is in tests/test_first_non_finite.cpp).
  CHECK(has(error_of([&] { stack.step(steps.chunk(2)).value_or_throw(); }), "step 2: non-finite values"));
  const Ticket fourth = stack.submit(steps.chunk(3)).value_or_throw();
  const Ticket fifth = stack.submit(steps.chunk(4)).value_or_throw();
  CHECK(fourth.step() == 3);
  CHECK(fifth.step() == 4);
  const Error first_of_two = error_of([&] { stack.wait().or_throw(); });
  CHECK(first_of_two.code() == ErrorCode::numerical_error);
  CHECK(std::string(first_of_two.what()).rfind("step 3: non-finite values (NaN or infinity) in the output rows", 0) == 0);
  test::check_no_validation_messages(test::gpu());
}

TEST_CASE("numerics: finite device results pass the checks that report NaN and infinity") {
  const StackConfig config = test::small_stack(2, {2, 1, 12}, 4, 0, 16, 16, Policy::lra_sum());
  RandomWeights weights(97);
  auto stack_owner = gpu::Stack::create(test::gpu(), config, weights).value_or_throw();
  gpu::Stack& stack = *stack_owner;
  const test::TokenStream tokens = test::random_tokens(8, config.vocab, 98);
  StackRequest want;
  want.logits = true;
  CHECK_NOTHROW(test::run_stack(stack, tokens, false, want));
  test::check_no_validation_messages(test::gpu());
}

TEST_CASE("numerics: with n_sink = 0 negative positions are not pinned, with sinks positions below n_sink are") {
  for (uint32_t sinks : {0u, 2u}) {
    LayerConfig config = small_layer(PolicyKind::fifo);
    config.kv.n_sink = sinks;
    // Without sinks every position may go; with two, positions -1, 0 and 1 are pinned.
    const int64_t first = sinks > 0 ? -1 : -12;
    test::Stream stream = test::random_stream(config.shape, 24, 99, {.first_position = first});
    reference::Layer cpu(config);
    auto device_owner = gpu::Layer::create(test::gpu(), config).value_or_throw();
    gpu::Layer& device = *device_owner;
    const auto expected = test::run_stream(cpu, stream);
    const auto actual = test::run_stream(device, stream);
    test::check_runs_match(expected, actual, 2e-4, 2e-4, "sinks " + std::to_string(sinks));
    // fifo keeps the newest positions, plus the pinned ones when sinks ask for them.
    const std::vector<int64_t>& last = actual.back().snapshot.positions;
    const bool keeps_oldest = std::find(last.begin(), last.end(), first) != last.end();
    CHECK(keeps_oldest == (sinks > 0));
  }
  test::check_no_validation_messages(test::gpu());
}

}  // namespace
}  // namespace attendre
