// The time-shifted stack (spec section 4) on the float64 reference and the
// GPU: the spec's invariants against a dense full-sequence forward, drain
// order and delay, flush against drain, decoding after reading.
#include "stack_support.hpp"
#include "support.hpp"

#include "kernels/kernel.hpp"

#include <attendre/gpu_stack.hpp>
#include <attendre/reference/stack.hpp>

#include <doctest/doctest.h>

#include <cmath>

using namespace attendre;

namespace {

using StackFactory = std::function<std::unique_ptr<TransformerStack>(const StackConfig&, WeightSource&)>;

std::vector<std::pair<const char*, StackFactory>> stack_backends() {
  return {{"reference", [](const StackConfig& c, WeightSource& w) { return std::make_unique<reference::Stack>(c, w); }},
          {"gpu", [](const StackConfig& c, WeightSource& w) { return gpu::Stack::create(test::gpu(), c, w).value_or_throw(); }}};
}

void check_matches_dense(const StackConfig& config, const test::TokenStream& s, bool causal) {
  RandomWeights weights(5);
  StackChunk whole = s.chunk(0, s.rows());
  const StackOutput dense = reference::dense_forward(config, weights, whole, causal);
  for (auto& [name, make] : stack_backends()) {
    INFO(std::string(name));
    auto stack = make(config, weights);
    const auto got = test::run_stack(*stack, s);
    REQUIRE(got.size() == dense.positions.size());
    for (size_t i = 0; i < dense.positions.size(); ++i) {
      const test::Emitted& e = got.at(dense.positions[i]);
      for (uint32_t d = 0; d < config.hidden; ++d)
        CHECK(e.hidden[d] == doctest::Approx(dense.hidden[i * config.hidden + d]).epsilon(2e-4).scale(1.0));
    }
  }
  test::check_no_validation_messages(test::gpu());
}

}  // namespace

TEST_CASE("stack: N = 0, causal, fifo, M >= T, K = M is causal full attention (L = 1 and 3, MHA and GQA)") {
  const test::TokenStream s = test::random_tokens(29, 37, 21, 0.1);
  for (uint32_t layers : {1u, 3u})
    for (AttentionShape shape : {AttentionShape{2, 2, 8}, AttentionShape{4, 2, 6}}) {
      StackConfig c = test::small_stack(layers, shape, 5, 0, 32, 32, Policy::fifo());
      for (BlockConfig& b : c.blocks) b.attention.retrieval.causal = true;
      check_matches_dense(c, s, true);
    }
}

TEST_CASE("stack: every N >= T, M >= T, K = M is bidirectional full attention (L = 1 and 3, MHA and GQA)") {
  const test::TokenStream s = test::random_tokens(23, 37, 22, 0.1);
  for (uint32_t layers : {1u, 3u})
    for (AttentionShape shape : {AttentionShape{2, 2, 8}, AttentionShape{4, 2, 6}}) {
      StackConfig c = test::small_stack(layers, shape, 4, 23, 28, 28, Policy::lra_sum());
      c.blocks[0].attention.q_capacity = 30;  // N may differ per block
      check_matches_dense(c, s, false);
    }
}

namespace {

// Steps both stacks in lockstep, comparing every block's retained
// positions and the emitted outputs at every step.
void check_gpu_matches_reference(const StackConfig& config, const test::TokenStream& s, uint64_t weight_seed,
                                 bool flush, Context& context = test::gpu()) {
  RandomWeights weights(weight_seed);
  reference::Stack cpu(config, weights);
  auto device_owner = gpu::Stack::create(context, config, weights).value_or_throw();
  gpu::Stack& device = *device_owner;
  StackRequest request;
  request.logits = true;
  auto compare = [&](const StackOutput& e, const StackOutput& a, const std::string& when) {
    INFO(when);
    REQUIRE(e.positions == a.positions);
    REQUIRE(e.hidden.size() == a.hidden.size());
    for (size_t i = 0; i < e.hidden.size(); ++i) CHECK(a.hidden[i] == doctest::Approx(e.hidden[i]).epsilon(1e-3).scale(1.0));
    for (size_t i = 0; i < e.logits.size(); ++i) CHECK(a.logits[i] == doctest::Approx(e.logits[i]).epsilon(1e-3).scale(1.0));
    for (size_t l = 0; l < config.blocks.size(); ++l) {
      INFO("block " << l);
      CHECK(cpu.snapshot(l).value_or_throw().positions == device.snapshot(l).value_or_throw().positions);
    }
  };
  uint32_t step = 0;
  for (uint32_t first = 0; first < s.rows(); first += config.chunk, ++step) {
    const StackChunk c = s.chunk(first, std::min(config.chunk, s.rows() - first));
    compare(cpu.step(c, request).value_or_throw(), device.step(c, request).value_or_throw(), "step " + std::to_string(step));
  }
  compare(cpu.finish(request, flush).value_or_throw(), device.finish(request, flush).value_or_throw(), "finish");
  for (uint32_t t = 0; t < 3; ++t) {
    const uint32_t token = (t * 7 + 3) % config.vocab;
    const int64_t position = s.rows() + t;
    const uint8_t valid = 1;
    StackChunk one;
    one.rows = 1;
    one.tokens = {&token, 1};
    one.positions = {&position, 1};
    one.valid = {&valid, 1};
    compare(cpu.decode(one, request).value_or_throw(), device.decode(one, request).value_or_throw(), "decode " + std::to_string(t));
  }
  INFO("smallest decision gap " << cpu.min_decision_gap());
  test::check_no_validation_messages(context);
}

}  // namespace

TEST_CASE("stack: the GPU stack equals the reference stack step by step with bounded memories") {
  const test::TokenStream s = test::random_tokens(61, 37, 31, 0.05);
  struct Variant {
    const char* name;
    uint32_t layers;
    AttentionShape shape;
    Policy policy;
  };
  for (const Variant& v : {Variant{"lra_sum MHA", 3, {2, 2, 8}, Policy::lra_sum()},
                           Variant{"lfa GQA", 2, {4, 2, 6}, Policy::lfa(0.01)},
                           Variant{"lru MQA", 2, {4, 1, 8}, Policy::lru()}}) {
    INFO(v.name);
    StackConfig c = test::small_stack(v.layers, v.shape, 6, 7, 14, 5, v.policy);
    c.blocks.back().attention.q_capacity = 4;  // per-block N differ, and N % S != 0
    check_gpu_matches_reference(c, s, 41, false);
  }
}

TEST_CASE("stack: fp16 memories equal the reference stack that rounds what it stores") {
  // Every block's keys, values and delayed queries in fp16 (projected and
  // rotated in fp32, then rounded on the device); the reference rounds the
  // same values, so the fp32 tolerance (1e-3) and equal retained positions
  // hold, decoding included.
  const test::TokenStream s = test::random_tokens(50, 37, 33, 0.05);
  StackConfig c = test::small_stack(2, {4, 2, 6}, 6, 7, 14, 5, Policy::lra_sum());
  c.blocks.back().attention.q_capacity = 4;
  c.blocks.back().attention.kv.n_sink = 2;
  for (BlockConfig& b : c.blocks) b.attention.kv.storage = MemoryStorage::f16;
  check_gpu_matches_reference(c, s, 44, false);
}

TEST_CASE("stack: fp16 memories under LM-Infinite agree with the reference within fp16 rounding") {
  // The device rounds each rotated variant it stores (three per query, two
  // per key), the reference the un-rotated q and k it rotates per pair: the
  // stored values differ by fp16 rounding (2^-11 relative), so the
  // tolerance is 2e-2 (hidden and logits ~1), and M >= T with K = M keeps
  // every entry, so no decision can flip.
  const test::TokenStream s = test::random_tokens(30, 37, 34);
  StackConfig c = test::small_stack(2, {4, 2, 8}, 4, 6, 40, 40, Policy::lra_sum());
  for (BlockConfig& b : c.blocks) {
    b.attention.kv.storage = MemoryStorage::f16;
    b.lm_infinite = {true, 3};
  }
  RandomWeights weights(45);
  reference::Stack cpu(c, weights);
  auto device_owner = gpu::Stack::create(test::gpu(), c, weights).value_or_throw();
  gpu::Stack& device = *device_owner;
  StackRequest request;
  request.logits = true;
  const auto expected = test::run_stack(cpu, s, false, request), actual = test::run_stack(device, s, false, request);
  REQUIRE(expected.size() == actual.size());
  double largest = 0.0;
  for (const auto& [position, e] : expected) {
    const test::Emitted& a = actual.at(position);
    REQUIRE(a.hidden.size() == e.hidden.size());
    for (size_t i = 0; i < e.hidden.size(); ++i) largest = std::max(largest, double(std::abs(a.hidden[i] - e.hidden[i])));
    for (size_t i = 0; i < e.logits.size(); ++i) largest = std::max(largest, double(std::abs(a.logits[i] - e.logits[i])));
  }
  INFO("largest difference " << largest);
  CHECK(largest < 2e-2);
  test::check_no_validation_messages(test::gpu());
}

TEST_CASE("stack: fp16 activations equal the reference stack that rounds them (with fp16 memories, odd widths, LayerNorm)") {
  // The normed rows and the FFN's activated rows in fp16 on the device; the
  // reference rounds the same values (fp32, then fp16 to nearest even), so
  // the fp32 tolerance (1e-3) and equal retained positions hold, decoding
  // included: a value that fp32 and float64 round to neighbouring halves
  // moves an output by ~1e-4.
  const test::TokenStream s = test::random_tokens(50, 37, 35, 0.05);
  SUBCASE("RMSNorm, SwiGLU, fp16 memories") {
    StackConfig c = test::small_stack(2, {4, 2, 6}, 6, 7, 14, 5, Policy::lra_sum());
    c.activations = MemoryStorage::f16;
    c.blocks.back().attention.q_capacity = 4;
    for (BlockConfig& b : c.blocks) b.attention.kv.storage = MemoryStorage::f16;
    check_gpu_matches_reference(c, s, 46, false);
  }
  SUBCASE("odd hidden and FFN widths, LayerNorm, GELU, a plain FFN, fp16 weights") {
    // fp32 math over the fp16 values: where gpu() takes fp16 products
    // (shaderFloat16), the context with float16 switched off runs this one;
    // the next test bounds what the fp16 products move.
    StackConfig c = test::small_stack(2, {4, 2, 8}, 5, 3, 16, 4, Policy::lra_max());
    c.activations = MemoryStorage::f16;
    c.weights = WeightType::f16;
    c.hidden = 25;
    for (BlockConfig& b : c.blocks) {
      b.norm = NormKind::layer;
      b.qkv_bias = b.ffn_bias = true;
      b.activation = ActivationKind::gelu_tanh;
      b.ffn = 41;
    }
    c.blocks[1].gated = false;
    const bool math = kernels::half_math(test::gpu().caps());
    check_gpu_matches_reference(c, s, 47, false, math ? test::half_loads_fp32_math_gpu() : test::gpu());
  }
}

namespace {

// Runs both stacks over `s` and returns the largest difference of their
// logits and the largest logit of `a`.
std::pair<double, double> logit_difference(gpu::Stack& a, gpu::Stack& b, const test::TokenStream& s,
                                           const StackRequest& request) {
  const auto x = test::run_stack(a, s, false, request), y = test::run_stack(b, s, false, request);
  REQUIRE(x.size() == y.size());
  double largest = 0.0, scale = 0.0;
  for (const auto& [position, e] : x) {
    const test::Emitted& h = y.at(position);
    for (size_t i = 0; i < e.logits.size(); ++i) {
      largest = std::max(largest, double(std::abs(h.logits[i] - e.logits[i])));
      scale = std::max(scale, double(std::abs(e.logits[i])));
    }
  }
  return {largest, scale};
}

}  // namespace

TEST_CASE("stack: fp16 activations move the outputs by fp16 rounding: more than fp32 noise, far less than the outputs") {
  // M >= T and K = M: every entry stays and is attended, so no eviction or
  // selection can flip and only the rounding shows.
  const test::TokenStream s = test::random_tokens(30, 37, 36);
  StackConfig c = test::small_stack(2, {4, 2, 8}, 4, 3, 40, 40, Policy::lru());
  RandomWeights weights(48);
  StackRequest request;
  request.logits = true;
  auto f32_owner = gpu::Stack::create(test::gpu(), c, weights).value_or_throw();
  gpu::Stack& f32 = *f32_owner;
  c.activations = MemoryStorage::f16;
  auto f16_owner = gpu::Stack::create(test::gpu(), c, weights).value_or_throw();
  gpu::Stack& f16 = *f16_owner;
  const auto [largest, scale] = logit_difference(f32, f16, s, request);
  INFO("largest logit difference " << largest << " of logits up to " << scale);
  CHECK(largest > 1e-5 * scale);  // the option is in effect
  CHECK(largest < 5e-3 * scale);  // and costs fp16 rounding only (7e-4 of the scale on lavapipe)
  test::check_no_validation_messages(test::gpu());
}

TEST_CASE("stack: fp16 activations times fp16 weights in fp16 math move the logits by the products' rounding only") {
  // fp16 activations x fp16 weights: gpu() multiplies them in fp16 where
  // shaderFloat16 and 16-bit loads are in use, the context with float16
  // switched off in fp32. M >= T and K = M: every entry stays and is
  // attended, so no eviction or selection can flip and only the products'
  // rounding shows: ~2^-11 per group of four, through two blocks.
  Context& math = test::gpu();
  if (!kernels::half_math(math.caps())) {
    MESSAGE("no fp16 math on this context: nothing to compare");
    return;
  }
  const test::TokenStream s = test::random_tokens(30, 37, 37);
  StackConfig c = test::small_stack(2, {4, 2, 8}, 4, 3, 40, 40, Policy::lru());
  c.weights = WeightType::f16;
  c.activations = MemoryStorage::f16;
  c.hidden = 25;  // odd: tail groups in every projection
  RandomWeights weights(49);
  StackRequest request;
  request.logits = true;
  auto fp32_math_owner = gpu::Stack::create(test::half_loads_fp32_math_gpu(), c, weights).value_or_throw();
  gpu::Stack& fp32_math = *fp32_math_owner;
  auto fp16_math_owner = gpu::Stack::create(math, c, weights).value_or_throw();
  gpu::Stack& fp16_math = *fp16_math_owner;
  const auto [largest, scale] = logit_difference(fp32_math, fp16_math, s, request);
  INFO("largest logit difference " << largest << " of logits up to " << scale);
  CHECK(largest > 1e-5 * scale);  // the fp16 products are in effect
  CHECK(largest < 5e-3 * scale);  // and cost their rounding only
  test::check_no_validation_messages(math);
  test::check_no_validation_messages(test::half_loads_fp32_math_gpu());
}

TEST_CASE("stack: block options (LayerNorm, biases, GELU, plain FFN, NeoX RoPE, fp16, tied) match the reference") {
  const test::TokenStream s = test::random_tokens(40, 37, 32);
  StackConfig c = test::small_stack(2, {4, 2, 8}, 5, 3, 16, 4, Policy::lra_max());
  c.final_norm = NormKind::layer;
  c.tied_embeddings = true;
  c.weights = WeightType::f16;
  for (BlockConfig& b : c.blocks) {
    b.norm = NormKind::layer;
    b.qkv_bias = b.output_bias = b.ffn_bias = true;
    b.activation = ActivationKind::gelu_tanh;
    b.rope_layout = RopeLayout::neox;
    b.rope_dims = 4;
    b.rope_theta = 500.0;
  }
  c.blocks[1].gated = false;
  c.blocks[1].activation = ActivationKind::relu;
  c.blocks[1].rope = false;
  check_gpu_matches_reference(c, s, 42, false);
}

TEST_CASE("stack: drain emits every valid position once, in order, delayed by the sum of N") {
  const test::TokenStream s = test::random_tokens(45, 37, 33, 0.2);
  StackConfig c = test::small_stack(3, {2, 1, 8}, 4, 5, 12, 4, Policy::lfu());
  c.blocks[1].attention.q_capacity = 0;
  c.blocks[2].attention.q_capacity = 7;
  const uint64_t shift = c.drain_positions();
  CHECK(shift == 12);
  for (auto& [name, make] : stack_backends()) {
    INFO(std::string(name));
    RandomWeights weights(6);
    auto stack = make(c, weights);
    // Padding chunks one at a time (what finish() does), to see each step.
    std::map<int64_t, size_t> emitted;
    size_t step = 0;
    auto keep = [&](const StackOutput& o) {
      for (int64_t p : o.positions) CHECK(emitted.emplace(p, step).second);
      ++step;
    };
    for (uint32_t first = 0; first < s.rows(); first += c.chunk)
      keep(stack->step(s.chunk(first, std::min(c.chunk, s.rows() - first))).value_or_throw());
    while (stack->has_pending()) keep(stack->step(StackChunk{}).value_or_throw());
    CHECK(step == (s.rows() + shift + c.chunk - 1) / c.chunk);
    std::vector<int64_t> expected;
    for (uint32_t r = 0; r < s.rows(); ++r) {
      if (!s.valid[r]) continue;
      expected.push_back(s.positions[r]);
      // Row r leaves the last block once sum(N) more rows went in behind it.
      CHECK(emitted.at(s.positions[r]) == (r + shift) / c.chunk);
    }
    std::vector<int64_t> got;
    for (const auto& [position, at] : emitted) got.push_back(position);
    CHECK(got == expected);
    CHECK_FALSE(stack->has_pending());
  }
  test::check_no_validation_messages(test::gpu());
}

TEST_CASE("stack: flush and drain produce identical outputs") {
  // Without insertions after the input ends, every waiting query sees the
  // same memory either way: one block with bounded memory, or deeper stacks
  // whose memories keep everything (causal, or every N >= T).
  const test::TokenStream s = test::random_tokens(33, 37, 34, 0.1);
  std::vector<std::pair<const char*, StackConfig>> cases;
  cases.emplace_back("L=1 bounded", test::small_stack(1, {2, 2, 8}, 4, 6, 12, 4, Policy::lra_sum()));
  StackConfig causal = test::small_stack(3, {4, 2, 6}, 4, 6, 40, 40, Policy::fifo());
  for (BlockConfig& b : causal.blocks) b.attention.retrieval.causal = true;
  cases.emplace_back("L=3 causal, M >= T", causal);
  cases.emplace_back("L=3, N >= T", test::small_stack(3, {2, 2, 8}, 4, 34, 80, 80, Policy::lru()));
  for (auto& [label, config] : cases) {
    config.flush_capable = true;
    for (auto& [name, make] : stack_backends()) {
      INFO(label << " on " << name);
      RandomWeights weights(7);
      auto drained = make(config, weights);
      auto flushed = make(config, weights);
      const auto a = test::run_stack(*drained, s, false);
      const auto b = test::run_stack(*flushed, s, true);
      REQUIRE(a.size() == b.size());
      for (const auto& [position, e] : a)
        for (size_t d = 0; d < e.hidden.size(); ++d)
          CHECK(b.at(position).hidden[d] == doctest::Approx(e.hidden[d]).epsilon(1e-4).scale(1.0));
    }
  }
  test::check_no_validation_messages(test::gpu());
}

TEST_CASE("stack: decoding after reading equals causal attention over prompt and decoded tokens") {
  // N = 0, causal, fifo, M >= T: reading is causal attention, and decoding
  // continues it one token at a time.
  const test::TokenStream prompt = test::random_tokens(19, 37, 35);
  StackConfig c = test::small_stack(2, {4, 2, 8}, 4, 0, 32, 32, Policy::fifo());
  for (BlockConfig& b : c.blocks) b.attention.retrieval.causal = true;
  const std::vector<uint32_t> next = {5, 11, 2, 30};
  test::TokenStream whole = prompt;
  for (uint32_t t = 0; t < next.size(); ++t) {
    whole.tokens.push_back(next[t]);
    whole.positions.push_back(prompt.rows() + t);
    whole.valid.push_back(1);
  }
  RandomWeights weights(8);
  StackRequest request;
  request.logits = true;
  const StackOutput dense = reference::dense_forward(c, weights, whole.chunk(0, whole.rows()), true, request);
  for (auto& [name, make] : stack_backends()) {
    INFO(std::string(name));
    auto stack = make(c, weights);
    test::run_stack(*stack, prompt);
    for (uint32_t t = 0; t < next.size(); ++t) {
      const StackOutput o = stack->decode(whole.chunk(prompt.rows() + t, 1), request).value_or_throw();
      REQUIRE(o.positions.size() == 1);
      const size_t row = prompt.rows() + t;
      for (uint32_t v = 0; v < c.vocab; ++v)
        CHECK(o.logits[v] == doctest::Approx(dense.logits[row * c.vocab + v]).epsilon(2e-4).scale(1.0));
    }
  }
  test::check_no_validation_messages(test::gpu());
}

// ---------------------------------------------------------------------------
// Positions: LM-Infinite distances, T5 buckets

namespace {

StackConfig with_lm_infinite(StackConfig c, uint32_t n_local) {
  for (BlockConfig& b : c.blocks) b.lm_infinite = {true, n_local};
  return c;
}

}  // namespace

TEST_CASE("stack: block options: LM-Infinite with the cap active matches the reference (future keys, sinks on and off)") {
  // n_local = 3 while queries wait N = 6: most pairs are capped, future
  // ones at -3. With 5 sinks, the first queries see sinks beyond the cap in
  // their future, which sit at +3 instead.
  const test::TokenStream s = test::random_tokens(45, 37, 36, 0.05);
  for (uint32_t sinks : {0u, 5u}) {
    INFO("sinks " << sinks);
    StackConfig c = with_lm_infinite(test::small_stack(2, {4, 2, 8}, 4, 6, 14, 6, Policy::lra_sum()), 3);
    for (BlockConfig& b : c.blocks) b.attention.kv.n_sink = sinks;
    c.blocks[0].rope_scaling.freq_factors = true;  // rope_freqs.weight through both backends
    c.blocks[1].rope_layout = RopeLayout::neox;
    c.blocks[1].rope_dims = 6;  // dims 6, 7 do not turn
    c.blocks[1].rope_scaling.kind = RopeScaling::Kind::linear;
    c.blocks[1].rope_scaling.factor = 2.0;
    check_gpu_matches_reference(c, s, 43, false);
  }
}

TEST_CASE("stack: LM-Infinite with n_local >= the stream length is ordinary RoPE, bit for bit on the GPU") {
  const test::TokenStream s = test::random_tokens(30, 37, 37, 0.1);
  StackConfig plain = test::small_stack(2, {4, 2, 8}, 4, 5, 12, 5, Policy::lru());
  for (BlockConfig& b : plain.blocks) b.attention.kv.n_sink = 2;
  RandomWeights weights(44);
  for (auto& [name, make] : stack_backends()) {
    INFO(std::string(name));
    const bool exact = std::string(name) == "gpu";
    const auto expected = test::run_stack(*make(plain, weights), s);
    const auto same = test::run_stack(*make(with_lm_infinite(plain, s.rows()), weights), s);
    const auto capped = test::run_stack(*make(with_lm_infinite(plain, 3), weights), s);
    REQUIRE(same.size() == expected.size());
    double capped_gap = 0.0;
    for (const auto& [position, e] : expected)
      for (size_t d = 0; d < e.hidden.size(); ++d) {
        if (exact) CHECK(same.at(position).hidden[d] == e.hidden[d]);
        else CHECK(same.at(position).hidden[d] == doctest::Approx(e.hidden[d]).epsilon(1e-9).scale(1.0));
        capped_gap = std::max(capped_gap, static_cast<double>(std::abs(capped.at(position).hidden[d] - e.hidden[d])));
      }
    CHECK(capped_gap > 1e-2);  // a cap within the stream changes what the comparison sees
  }
  test::check_no_validation_messages(test::gpu());
}

TEST_CASE("stack: N >= T, M >= T, K = M is dense attention at LM-Infinite's capped distances and with T5 buckets") {
  const test::TokenStream s = test::random_tokens(23, 37, 38, 0.1);
  // Every future key beyond n_local = 5 sits at -5, every past one at +5;
  // the two sinks at +5 wherever they are.
  StackConfig lm = with_lm_infinite(test::small_stack(2, {4, 2, 6}, 4, 23, 28, 28, Policy::lra_sum()), 5);
  for (BlockConfig& b : lm.blocks) b.attention.kv.n_sink = 2;
  check_matches_dense(lm, s, false);
  // T5 buckets saturating at 12 of 23 positions: block 1 reads block 0's table.
  StackConfig t5 = test::small_stack(2, {2, 2, 8}, 4, 23, 28, 28, Policy::lfu());
  for (BlockConfig& b : t5.blocks) {
    b.rope = false;
    b.attention.retrieval.bias = BiasKind::t5;
    b.attention.retrieval.t5.num_buckets = 8;
    b.attention.retrieval.t5.max_distance = 12;
  }
  t5.blocks[1].t5_table_block = 0;
  check_matches_dense(t5, s, false);
}
