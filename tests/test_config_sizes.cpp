// Sizes whose products pass 32 bits: a query row (heads_q * head_dim), a
// memory's row strides and its whole layout are counted in 32 bits on the
// device, so every product of sizes a caller gives is computed in 64 bits
// and refused past that, with a message naming the fields or the buffer and
// what makes it smaller; nothing wraps to 0 (a zero divisor once) or to a
// small size that a check would then accept.
#include "stack_support.hpp"
#include "support.hpp"

#include "gpu/layouts.hpp"

#include <attendre/gpu_stack.hpp>

#include <doctest/doctest.h>

#include <string>

using namespace attendre;

namespace {

constexpr uint64_t k2to32 = uint64_t{1} << 32;

struct WrappingShape {
  AttentionShape shape;
  uint64_t product;  // heads_q * head_dim
};

// heads_q * head_dim at 2^32 (where a 32-bit product is 0) and just past it.
const WrappingShape kWrapping[] = {
    {{65536, 2, 65536}, k2to32},
    {{1u << 31, 1, 2}, k2to32},
    {{65537, 1, 65536}, k2to32 + 65536},
    {{3, 1, 1431655766}, k2to32 + 2},
};

void check_names_the_product(const Status& status, const WrappingShape& w) {
  REQUIRE_FALSE(status.ok());
  CHECK(status.code() == ErrorCode::invalid_argument);
  const std::string& message = status.message();
  INFO(message);
  CHECK(message.find("heads_q * head_dim must fit 32 bits, got heads_q=" + std::to_string(w.shape.heads_q) +
                     " head_dim=" + std::to_string(w.shape.head_dim) + " (" + std::to_string(w.product) + ")") !=
        std::string::npos);
  CHECK(message.find('\n') == std::string::npos);
}

}  // namespace

TEST_CASE("config sizes: heads_q * head_dim past 32 bits is refused by a layer's config, naming both") {
  for (const WrappingShape& w : kWrapping) {
    LayerConfig c;
    c.shape = w.shape;
    c.chunk = 4;
    c.kv.capacity = 8;
    c.retrieval.top_k = 8;
    check_names_the_product(c.check(), w);
  }
  // 2^32 - 1 still fits (the device's limits refuse it later, by name).
  LayerConfig largest;
  largest.shape = {65535, 1, 65537};
  largest.chunk = 4;
  largest.kv.capacity = 8;
  largest.retrieval.top_k = 8;
  CHECK(largest.check().ok());
}

TEST_CASE("config sizes: a stack whose heads_q * head_dim wraps is refused by its plan and its creation") {
  for (const WrappingShape& w : kWrapping) {
    INFO(w.product);
    const StackConfig c = test::small_stack(2, w.shape, 4, 2, 8, 4, Policy::fifo());
    // Planning divided by the 0-byte rows of a wrapped width before.
    const Result<gpu::StackLayout> planned = gpu::plan_stack_layout(c, DeviceCaps{});
    check_names_the_product(planned.status(), w);
    CHECK(planned.status().message().rfind("block 0: ", 0) == 0);
    RandomWeights weights(3);
    check_names_the_product(gpu::Stack::create(test::gpu(), c, weights).status(), w);
  }
}

TEST_CASE("config sizes: a row stride past 32 bits fails its layout instead of wrapping") {
  // Two key variants (LM-Infinite) of a 2^31-float key row: 2^32 elements.
  const AttentionShape wide_keys{1, 1, 1u << 31};
  CHECK_FALSE(gpu::KvLayout::make(1, wide_keys, 2).ok());
  CHECK_FALSE(gpu::ChunkLayout::make(1, wide_keys, 2).ok());
  // An fp16 row is padded to an even count: 2^32 - 1 floats become 2^32.
  const AttentionShape widest_queries{0xFFFFFFFFu, 1, 1};
  CHECK_FALSE(gpu::RingLayout::make(1, widest_queries, 0, 1, MemoryStorage::f16).ok());
  CHECK_FALSE(gpu::KvLayout::make(1, {1, 0xFFFFFFFFu, 1}, 1, {}, MemoryStorage::f16).ok());
}

TEST_CASE("config sizes: a memory layout past 2^32 words names its buffer and the option that shrinks it") {
  // M = 2^31 slots of 8 heads of 128: keys alone take 2^41 words.
  StackConfig c = test::small_stack(2, {8, 8, 128}, 4, 2, 1u << 31, 4, Policy::fifo());
  c.hidden = 1024;
  const Result<gpu::StackLayout> planned = gpu::plan_stack_layout(c, DeviceCaps{});
  REQUIRE_FALSE(planned.ok());
  CHECK(planned.status().code() == ErrorCode::out_of_device_memory);
  CHECK(planned.status().message() ==
        "'block 0 kv memory' exceeds 2^32 words, past the kernels' 32-bit indices; lower M (kv_capacity), heads_kv "
        "or head_dim, or use fp16 memories");
  // N likewise names the Q ring.
  c = test::small_stack(2, {8, 8, 128}, 4, (1u << 31) - 4, 8, 4, Policy::fifo());
  c.hidden = 1024;
  const Status ring = gpu::plan_stack_layout(c, DeviceCaps{}).status();
  REQUIRE_FALSE(ring.ok());
  CHECK(ring.message() ==
        "'block 0 q ring' exceeds 2^32 words, past the kernels' 32-bit indices; lower N (q_capacity) or the chunk S, "
        "or use fp16 memories");
}
