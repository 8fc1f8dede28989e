// Big models on small limits: the stack's whole layout (every buffer and
// allocation) planned without allocating, for a Llama-3.2-3B-shaped model
// under the limits of phone drivers, and refused, naming the buffer and the
// limit, where one buffer cannot fit.
#include "stack_support.hpp"
#include "support.hpp"

#include <attendre/error.hpp>
#include <attendre/gpu_stack.hpp>

#include <doctest/doctest.h>

#include <string>

using namespace attendre;

namespace {

constexpr uint64_t kMiB = uint64_t{1} << 20;

// Llama-3.2-3B: hidden 3072, 28 blocks, 24 query and 8 key/value heads of
// 128, FFN 8192, vocabulary 128256 (tied), with M = 4096, N = 1024, S = 128, K = 256.
StackConfig llama_3b(uint32_t kv_capacity = 4096) {
  StackConfig c;
  c.hidden = 3072;
  c.vocab = 128256;
  c.tied_embeddings = true;
  c.chunk = 128;
  for (uint32_t l = 0; l < 28; ++l) {
    BlockConfig b;
    b.attention.shape = {24, 8, 128};
    b.attention.q_capacity = 1024;
    b.attention.kv.capacity = kv_capacity;
    b.attention.kv.policy = Policy::lra_sum();
    b.attention.retrieval.top_k = 256;
    b.ffn = 8192;
    b.rope_theta = 500000.0;
    c.blocks.push_back(b);
  }
  return c;
}

// Every matrix in Q4_K (no data: planning reads types only).
class Q4KTypes final : public WeightSource {
 public:
  Result<std::optional<ElementType>> type_of(const std::string&, std::span<const uint64_t> shape) override {
    return std::optional<ElementType>(shape.size() == 2 ? ElementType::q4_k : ElementType::f32);
  }
  Result<std::optional<TensorView>> tensor(const std::string&, std::span<const uint64_t>) override {
    return std::optional<TensorView>();
  }
};

void check_within(const gpu::StackLayout& layout, const DeviceCaps& caps, const StackConfig& config) {
  CHECK_NOTHROW(layout.check(caps).or_throw());
  uint64_t placed = 0, own = 0, parts = 0;
  for (const gpu::PlannedBuffer& b : layout.buffers) {
    INFO(b.name << ": " << b.bytes);
    CHECK(b.bytes <= caps.max_storage_range);
    CHECK(b.bytes <= caps.max_allocation);
    (b.weights ? placed : own) += b.bytes;
    if (b.name.rfind("token_embd.weight part ", 0) == 0) ++parts;
  }
  uint64_t allocated = 0;
  for (uint64_t a : layout.weight_allocations) {
    CHECK(a <= caps.max_allocation);
    allocated += a;
  }
  CHECK(allocated >= placed);
  CHECK(layout.weight_allocations.size() >= (placed + caps.max_allocation - 1) / caps.max_allocation);
  // The vocabulary's table is split by rows into ranges (several GiB of
  // weights in total, none of it in one buffer).
  CHECK(parts > 1);
  // The totals are plan_stack_memory's: the listing leaves nothing out.
  const gpu::StackMemory& m = layout.memory;
  uint64_t weights = m.model, rest = m.scratch + m.activations + m.staging;
  for (const gpu::BlockMemory& b : m.blocks) weights += b.weights, rest += b.q_memory + b.kv_memory;
  CHECK(placed == weights);
  CHECK(own == rest);
  CHECK(layout.memory.blocks.size() == config.blocks.size());
}

}  // namespace

TEST_CASE("stack layout: a 3B-class model plans within 128 MiB ranges and 1 GiB allocations, and the portable limits") {
  const StackConfig f16 = [] {
    StackConfig c = llama_3b();
    c.weights = WeightType::f16;
    return c;
  }();
  DeviceCaps phone;  // the defaults are the Vulkan minimums: 128 invocations, 16 KiB shared, 128 MiB ranges
  phone.max_storage_range = 128 * kMiB;
  phone.max_allocation = 1024 * kMiB;
  DeviceCaps here = test::gpu().caps();
  here.max_storage_range = std::min<uint64_t>(here.max_storage_range, 128 * kMiB);
  here.max_allocation = std::min<uint64_t>(here.max_allocation, 1024 * kMiB);
  Q4KTypes q4k;
  for (const DeviceCaps* caps : {&phone, &here}) {
    {
      INFO("F16");
      const gpu::StackLayout layout = gpu::plan_stack_layout(f16, *caps).value_or_throw();
      check_within(layout, *caps, f16);
      CHECK(layout.memory.total() == gpu::plan_stack_memory(f16, *caps).value_or_throw().total());
      CHECK(layout.weight_allocations.size() >= 6);  // over 6 GiB of fp16 weights
    }
    {
      INFO("Q4_K");
      const StackConfig c = llama_3b();
      const gpu::StackLayout layout = gpu::plan_stack_layout(c, *caps, q4k).value_or_throw();
      check_within(layout, *caps, c);
      CHECK(layout.memory.total() == gpu::plan_stack_memory(c, *caps, q4k).value_or_throw().total());
    }
  }
}

TEST_CASE("stack layout: a K/V memory past one storage range is refused, naming the buffer and the limit") {
  // M = 2^18: 2^18 slots x 8 heads x 128 dims x (key + value) x 4 bytes = 2 GiB in one block's memory.
  const StackConfig c = llama_3b(1u << 18);
  DeviceCaps phone;
  phone.max_storage_range = 128 * kMiB;
  const gpu::StackLayout layout = gpu::plan_stack_layout(c, phone).value_or_throw();
  try {
    layout.check(phone).or_throw();
    FAIL("a 2 GiB K/V memory was accepted");
  } catch (const Error& e) {
    CHECK(e.code() == ErrorCode::unsupported);
    const std::string message = e.what();
    CHECK(message.find("'block 0 kv memory' needs") != std::string::npos);
    CHECK(message.find("storage-buffer range of 128 MiB") != std::string::npos);
  }
}

// RandomWeights counting the tensors read (types are free).
class CountedWeights final : public WeightSource {
 public:
  Result<std::optional<ElementType>> type_of(const std::string& name, std::span<const uint64_t> shape) override {
    return inner_.type_of(name, shape);
  }
  Result<std::optional<TensorView>> tensor(const std::string& name, std::span<const uint64_t> shape) override {
    ++reads;
    return inner_.tensor(name, shape);
  }
  uint32_t reads = 0;

 private:
  RandomWeights inner_{5};
};

TEST_CASE("stack layout: a stack past the device's limits is refused at creation, before any weight is read") {
  // Block 1's K/V memory (M = 40000, 2 heads of 8, keys and values in fp32,
  // with their positions and scores) needs 6 MiB; the context's storage
  // range is 1 MiB.
  StackConfig c = test::small_stack(2, {4, 2, 8}, 4, 5, 16, 4, Policy::lru());
  c.blocks[1].attention.kv.capacity = 40000;
  ContextOptions options;
  options.limits = LimitOverrides{std::nullopt, std::nullopt, uint64_t{1} << 20};
  auto narrow_owner = Context::create(options).value_or_throw();
  Context& narrow = *narrow_owner;
  CountedWeights weights;
  const Result<std::unique_ptr<gpu::Stack>> made = gpu::Stack::create(narrow, c, weights);
  REQUIRE_FALSE(made.ok());
  CHECK(made.status().code() == ErrorCode::unsupported);
  CHECK(made.status().message() ==
        "'block 1 kv memory' needs 6 MiB in one buffer, over the device's storage-buffer range of 1 MiB; lower M "
        "(kv_capacity), heads_kv or head_dim, or use fp16 memories");
  CHECK(weights.reads == 0);
  CHECK(narrow.device_memory_bytes() == 0);
  // The logits of one step past the range: the chunk is what to lower.
  c.blocks[1].attention.kv.capacity = 16;
  const uint32_t vocab = c.vocab;
  c.vocab = 70000;
  const Status logits = gpu::Stack::create(narrow, c, weights).status();
  CHECK(logits.message().rfind("'logits' needs ", 0) == 0);
  CHECK(logits.message().ends_with("storage-buffer range of 1 MiB; lower the chunk S"));
  CHECK(weights.reads == 0);
  c.vocab = vocab;
  // The same stack within the range is made, and reads its weights.
  REQUIRE(gpu::Stack::create(narrow, c, weights).ok());
  CHECK(weights.reads > 0);
  test::check_no_validation_messages(narrow);
}

TEST_CASE("stack layout: the planned buffers are the ones a small stack allocates") {
  StackConfig c = test::small_stack(2, {4, 2, 8}, 4, 5, 16, 4, Policy::lru());
  SUBCASE("fp32 memories") {}
  SUBCASE("fp16 memories") {
    for (BlockConfig& b : c.blocks) b.attention.kv.storage = MemoryStorage::f16;
  }
  SUBCASE("fp16 activations") { c.activations = MemoryStorage::f16; }
  RandomWeights weights(3);
  const uint64_t before = test::gpu().device_memory_bytes();
  auto device_owner = gpu::Stack::create(test::gpu(), c, weights).value_or_throw();
  gpu::Stack& device = *device_owner;
  const gpu::StackLayout layout = gpu::plan_stack_layout(c, test::gpu().caps(), weights).value_or_throw();
  CHECK_NOTHROW(layout.check(test::gpu().caps()).or_throw());
  uint64_t allocations = 0;
  for (const gpu::PlannedBuffer& b : layout.buffers)
    if (!b.weights) allocations += b.bytes;
  for (uint64_t a : layout.weight_allocations) allocations += a;
  // What the device allocator holds: the arena's blocks and every other buffer.
  CHECK(test::gpu().device_memory_bytes() - before == allocations);
  CHECK(device.memory().total() == layout.memory.total());
  test::check_no_validation_messages(test::gpu());
}

TEST_CASE("stack layout: fp16 memories halve the keys, values and queries of a 3B-class model") {
  // Per block: keys and values 4096 x 8 x 128 x 2 elements, queries
  // (1024 + 128) x 24 x 128; positions, scores, tags, the fp32 chunk, the
  // residual rows and (fp16 only) the fp32 incoming queries stay.
  StackConfig c = llama_3b();
  const gpu::StackMemory f32 = gpu::plan_stack_memory(c, DeviceCaps{}).value_or_throw();
  for (BlockConfig& b : c.blocks) b.attention.kv.storage = MemoryStorage::f16;
  const gpu::StackMemory f16 = gpu::plan_stack_memory(c, DeviceCaps{}).value_or_throw();
  const gpu::BlockMemory& a = f32.blocks[0];
  const gpu::BlockMemory& h = f16.blocks[0];
  MESSAGE("block K/V memory " << a.kv_memory << " -> " << h.kv_memory << " bytes, Q memory " << a.q_memory << " -> "
                              << h.q_memory << ", whole stack " << f32.total() << " -> " << f16.total());
  CHECK(a.kv_memory - h.kv_memory == 4096ull * 8 * 128 * 2 * 2);  // 2 bytes saved per key and value element
  CHECK(a.q_memory - h.q_memory == 1152ull * 24 * 128 * 2 - 128ull * 24 * 128 * 4);  // less the incoming rows
  CHECK(a.weights == h.weights);
  CHECK(f32.total() - f16.total() == 28 * ((a.kv_memory - h.kv_memory) + (a.q_memory - h.q_memory)));
}

TEST_CASE("stack layout: fp16 activations keep the normed and the FFN's activated rows in one buffer of halves") {
  // fp32: normed rows [S][hidden], the activated rows in place of the gate
  // rows. fp16: one buffer of [S][max(hidden, ffn)] halves holds both in
  // turn (0.5 MiB more here: the products read half the bytes, the memory
  // barely changes); the gate and up rows, the residual stream and the
  // rest stay as they are.
  StackConfig c = llama_3b();
  Q4KTypes types;
  const gpu::StackLayout f32 = gpu::plan_stack_layout(c, DeviceCaps{}, types).value_or_throw();
  c.activations = MemoryStorage::f16;
  const gpu::StackLayout f16 = gpu::plan_stack_layout(c, DeviceCaps{}, types).value_or_throw();
  auto bytes = [](const gpu::StackLayout& layout, const std::string& name) {
    for (const gpu::PlannedBuffer& b : layout.buffers)
      if (b.name == name) return b.bytes;
    FAIL("no buffer " << name);
    return uint64_t{0};
  };
  CHECK(bytes(f32, "normed rows") == 128ull * 3072 * 4);
  CHECK(bytes(f16, "normed rows") == 128ull * 8192 * 2);
  CHECK(bytes(f32, "ffn rows") == bytes(f16, "ffn rows"));
  CHECK(f16.memory.activations - f32.memory.activations == 128ull * 8192 * 2 - 128ull * 3072 * 4);
  CHECK(f16.memory.blocks[0].weights == f32.memory.blocks[0].weights);
}
