// Resources of the device stack: what it holds is what plan_stack_memory()
// predicts, and streaming 100,000 positions neither grows host nor device
// memory nor lets the outputs drift to non-finite values.
#include "stack_support.hpp"
#include "support.hpp"

#include "core/half.hpp"
#include "gguf/quant.hpp"

#include <attendre/error.hpp>
#include <attendre/gpu_stack.hpp>
#include <attendre/reference/stack.hpp>

#include <doctest/doctest.h>

#include <cmath>
#include <fstream>
#include <string>

using namespace attendre;

namespace {

// Resident set of this process in KiB (lavapipe's device memory is host
// memory, so this covers both).
uint64_t resident_kib() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line))
    if (line.rfind("VmRSS:", 0) == 0) return std::stoull(line.substr(6));
  return 0;
}

void check_memory_equals_plan(const StackConfig& c) {
  RandomWeights weights(3);
  auto stack_owner = gpu::Stack::create(test::gpu(), c, weights).value_or_throw();
  gpu::Stack& stack = *stack_owner;
  const gpu::StackMemory held = stack.memory(), planned = gpu::plan_stack_memory(c, test::gpu().caps()).value_or_throw();
  REQUIRE(held.blocks.size() == planned.blocks.size());
  for (size_t l = 0; l < held.blocks.size(); ++l) {
    INFO("block " << l);
    CHECK(held.blocks[l].weights == planned.blocks[l].weights);
    CHECK(held.blocks[l].q_memory == planned.blocks[l].q_memory);
    CHECK(held.blocks[l].kv_memory == planned.blocks[l].kv_memory);
  }
  CHECK(held.model == planned.model);
  CHECK(held.scratch == planned.scratch);
  CHECK(held.activations == planned.activations);
  CHECK(held.staging == planned.staging);
  CHECK(held.total() == planned.total());
}

}  // namespace

TEST_CASE("stack memory: what the stack holds is what plan_stack_memory predicts") {
  StackConfig a = test::small_stack(3, {4, 2, 8}, 6, 7, 20, 5, Policy::lra_sum());
  a.blocks[1].attention.kv.capacity = 33;
  a.blocks[2].ffn = 64;
  check_memory_equals_plan(a);
  StackConfig b = test::small_stack(2, {2, 2, 8}, 4, 9, 30, 30, Policy::lfu());
  b.flush_capable = true;
  b.tied_embeddings = true;
  b.blocks[0].qkv_bias = b.blocks[1].ffn_bias = true;
  b.blocks[1].norm = NormKind::layer;
  check_memory_equals_plan(b);
  // Positions: LM-Infinite's query and key variants, T5 tables, rope_freqs.
  StackConfig p = test::small_stack(2, {4, 2, 8}, 4, 5, 12, 5, Policy::lru());
  p.blocks[0].lm_infinite = {true, 16};
  p.blocks[0].rope_scaling.freq_factors = true;
  p.blocks[1].rope = false;
  p.blocks[1].attention.retrieval.bias = BiasKind::t5;
  check_memory_equals_plan(p);
  test::check_no_validation_messages(test::gpu());
}

TEST_CASE("stack soak: 100,000 positions keep host and device memory flat and outputs finite") {
  StackConfig c = test::small_stack(2, {1, 1, 8}, 64, 32, 64, 8, Policy::lra_sum());
  c.hidden = 16;
  c.blocks[1].attention.kv.policy = Policy::lfa(1e-3);
  RandomWeights weights(9);
  auto stack_owner = gpu::Stack::create(test::gpu(), c, weights).value_or_throw();
  gpu::Stack& stack = *stack_owner;
  const gpu::StackMemory before = stack.memory();

  const uint64_t total = 100000;
  std::vector<uint32_t> tokens(c.chunk);
  std::vector<int64_t> positions(c.chunk);
  uint64_t emitted = 0, checked = 0, warm_kib = 0;
  StackRequest quiet;
  quiet.hidden = false;
  for (uint64_t first = 0, step = 0; first < total; first += c.chunk, ++step) {
    const uint32_t rows = static_cast<uint32_t>(std::min<uint64_t>(c.chunk, total - first));
    for (uint32_t r = 0; r < rows; ++r) {
      tokens[r] = static_cast<uint32_t>((first + r) * 2654435761u % c.vocab);
      positions[r] = static_cast<int64_t>(first + r);
    }
    StackChunk chunk;
    chunk.rows = rows;
    chunk.tokens = {tokens.data(), rows};
    chunk.positions = {positions.data(), rows};
    // Read back one step in a hundred; the others stay on the device.
    const bool look = step % 100 == 0;
    const StackOutput o = stack.step(chunk, look ? StackRequest{} : quiet).value_or_throw();
    emitted += o.positions.size();
    if (look) {
      for (float x : o.hidden) {
        CHECK(std::isfinite(x));
        ++checked;
      }
    }
    if (step == 150) warm_kib = resident_kib();
  }
  emitted += stack.finish().value_or_throw().positions.size();
  CHECK(emitted == total);
  CHECK(checked > 0);
  const uint64_t end_kib = resident_kib();
  MESSAGE("resident " << warm_kib << " KiB after warm-up, " << end_kib << " KiB after " << total << " positions");
  CHECK(end_kib <= warm_kib + 8 * 1024);  // flat: no per-step growth beyond allocator noise
  CHECK(stack.memory().total() == before.total());
  test::check_no_validation_messages(test::gpu());
}

namespace {

// Random fp32 weights with chosen matrices converted to fp16, or encoded in
// another type (a GGUF block type, by the CPU quantizer), at the source.
class MixedWeights final : public WeightSource {
 public:
  MixedWeights(uint64_t seed, std::string f16_part, std::string other_part = "", ElementType other = ElementType::q4_0)
      : inner_(seed), f16_part_(std::move(f16_part)), other_part_(std::move(other_part)), other_(other) {}
  Result<std::optional<ElementType>> type_of(const std::string& name, std::span<const uint64_t>) override {
    return std::optional<ElementType>(type(name));
  }
  Result<std::optional<TensorView>> tensor(const std::string& name, std::span<const uint64_t> shape) override {
    const std::vector<float> values = inner_.values(name, shape);
    bytes_.clear();
    const ElementType t = type(name);
    if (t == ElementType::f16) {
      for (float x : values) {
        const uint16_t h = half::float_to_half(x);
        bytes_.push_back(static_cast<std::byte>(h & 0xFF));
        bytes_.push_back(static_cast<std::byte>(h >> 8));
      }
    } else if (t != ElementType::f32) {
      bytes_ = gguf::quantize(static_cast<gguf::TensorType>(t), values).value_or_throw();
    } else {
      const auto raw = std::as_bytes(std::span<const float>(values));
      bytes_.assign(raw.begin(), raw.end());
    }
    return std::optional<TensorView>(TensorView{t, bytes_});
  }

 private:
  ElementType type(const std::string& name) const {
    if (!other_part_.empty() && name.find(other_part_) != std::string::npos) return other_;
    return !f16_part_.empty() && name.find(f16_part_) != std::string::npos && name.find(".bias") == std::string::npos
               ? ElementType::f16
               : ElementType::f32;
  }
  RandomWeights inner_;
  std::string f16_part_, other_part_;
  ElementType other_;
  std::vector<std::byte> bytes_;
};

}  // namespace

TEST_CASE("stack memory: what the stack holds is what the device allocator holds, through staging or in place") {
  StackConfig c = test::small_stack(2, {4, 2, 8}, 6, 7, 20, 5, Policy::lra_sum());
  c.vocab = 24000;  // a 9 MiB embedding table: more than one half of the staging ring
  c.hidden = 96;
  std::vector<std::vector<float>> outputs;
  for (bool discrete : {false, true}) {
    ContextOptions options;
    LimitOverrides limits;
    limits.discrete_memory = discrete;
    options.limits = limits;
    auto context_owner = Context::create(options).value_or_throw();
    Context& context = *context_owner;
    INFO("discrete memory " << discrete << ", unified " << context.caps().unified_memory);
    const uint64_t before = context.device_memory_bytes();
    RandomWeights weights(4);
    auto stack_owner = gpu::Stack::create(context, c, weights).value_or_throw();
    gpu::Stack& stack = *stack_owner;
    const gpu::StackMemory held = stack.memory();
    CHECK(context.device_memory_bytes() - before == held.total());
    CHECK(held.total() == gpu::plan_stack_memory(c, context.caps()).value_or_throw().total());
    CHECK(held.load_staging == (context.caps().unified_memory ? 0 : uint64_t{8} << 20));
    const test::TokenStream tokens = test::random_tokens(24, c.vocab, 5);
    StackRequest want;
    want.logits = true;
    std::vector<float> logits;
    for (const auto& [position, e] : test::run_stack(stack, tokens, false, want))
      logits.insert(logits.end(), e.logits.begin(), e.logits.end());
    outputs.push_back(logits);
    test::check_no_validation_messages(context);
  }
  CHECK(!outputs[0].empty());
  CHECK(outputs[0] == outputs[1]);  // the same bytes on the device, whichever way they came
}

TEST_CASE("stack: weights keep their own encoding per tensor, and the memory plan holds each at its encoded size") {
  StackConfig c = test::small_stack(2, {4, 2, 8}, 4, 5, 16, 4, Policy::lru());
  for (BlockConfig& b : c.blocks) b.ffn = 256;  // rows of whole Q4_K blocks for ffn_down
  // The q projections in F16, ffn_down in Q4_K (its decoded values are what
  // the reference multiplies by), the rest in F32.
  MixedWeights mixed(6, "attn_q", "ffn_down", ElementType::q4_k);
  const uint64_t before = test::gpu().device_memory_bytes();
  auto device_owner = gpu::Stack::create(test::gpu(), c, mixed).value_or_throw();
  gpu::Stack& device = *device_owner;
  // The arena holds each tensor at its encoded size (blocks of 144 bytes
  // per 256 values), as planned before loading.
  CHECK(test::gpu().device_memory_bytes() - before == device.memory().total());
  CHECK(device.memory().total() == gpu::plan_stack_memory(c, test::gpu().caps(), mixed).value_or_throw().total());
  CHECK(device.memory().total() < gpu::plan_stack_memory(c, test::gpu().caps()).value_or_throw().total());
  reference::Stack cpu(c, mixed);
  const test::TokenStream tokens = test::random_tokens(20, c.vocab, 7);
  const auto expected = test::run_stack(cpu, tokens);
  const auto actual = test::run_stack(device, tokens);
  REQUIRE(expected.size() == actual.size());
  for (const auto& [position, e] : expected) {
    const std::vector<float>& a = actual.at(position).hidden;
    for (size_t i = 0; i < e.hidden.size(); ++i) CHECK(a[i] == doctest::Approx(e.hidden[i]).epsilon(1e-3));
  }
  test::check_no_validation_messages(test::gpu());
}

TEST_CASE("stack: embedding tables and LM heads past one storage range are split by rows and equal unsplit ones") {
  // 300 rows of 24 floats (28,800 bytes) in ranges of 4 KiB: 9 parts of 37 rows.
  StackConfig c = test::small_stack(2, {4, 2, 6}, 3, 2, 12, 6, Policy::lra_sum());
  c.vocab = 300;
  ContextOptions options;
  LimitOverrides limits;
  limits.max_storage_range = 4096;
  options.limits = limits;
  auto small_owner = Context::create(options).value_or_throw();
  Context& small = *small_owner;
  const test::TokenStream tokens = test::random_tokens(17, c.vocab, 9, 0.2);  // padding rows take id = vocab
  StackRequest want;
  want.logits = true;
  for (bool tied : {false, true}) {
    INFO("tied " << tied);
    c.tied_embeddings = tied;
    RandomWeights weights(12);
    auto split_owner = gpu::Stack::create(small, c, weights).value_or_throw();
    gpu::Stack& split = *split_owner;
    auto whole_owner = gpu::Stack::create(test::gpu(), c, weights).value_or_throw();
    gpu::Stack& whole = *whole_owner;
    CHECK(gpu::plan_stack_memory(c, small.caps()).value_or_throw().model > gpu::plan_stack_memory(c, test::gpu().caps()).value_or_throw().model);
    const auto expected = test::run_stack(whole, tokens, false, want);
    const auto actual = test::run_stack(split, tokens, false, want);
    REQUIRE(actual.size() == expected.size());
    for (const auto& [position, e] : expected) {
      const test::Emitted& a = actual.at(position);
      for (size_t i = 0; i < e.logits.size(); ++i) CHECK(a.logits[i] == doctest::Approx(e.logits[i]).epsilon(1e-5));
    }
    // And after reading, one position at a time.
    const test::OnePosition one{299, 17};  // an id in the last part
    const std::vector<float> a = split.decode(one.chunk(), want).value_or_throw().logits, e = whole.decode(one.chunk(), want).value_or_throw().logits;
    for (size_t i = 0; i < e.size(); ++i) CHECK(a[i] == doctest::Approx(e[i]).epsilon(1e-5));
  }
  test::check_no_validation_messages(small);
  test::check_no_validation_messages(test::gpu());
}
