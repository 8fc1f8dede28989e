// fp16 K/V and Q memories (KvMemoryConfig::storage = f16) against the
// float64 reference, which rounds what it stores exactly as the device does
// (round to nearest even, fp16 subnormals to zero: core/half.hpp). Both
// sides then compute from identical stored values, so the fp32 tolerances
// of the fp32 tests hold; both load paths (16-bit loads, and unpackHalf2x16
// of words with the "16bit" switch off) run on tile-crossing sizes.
#include "support.hpp"

#include "core/half.hpp"
#include "gpu/layouts.hpp"

#include <attendre/error.hpp>
#include <attendre/gpu.hpp>
#include <attendre/reference/layer.hpp>

#include <doctest/doctest.h>

#include <cmath>
#include <sstream>

using namespace attendre;

namespace {

// fp16 keeps 11 significant bits: two scores closer than half an fp16 ulp
// (relative 2^-11) may order differently once stored values are rounded.
// The reference rounds as the device does, so its decisions are the
// device's; still, the rule of this comparison is explicit: retained sets
// must be equal unless the reference's smallest relative decision gap is
// below fp16 resolution, and such streams are drawn again.
constexpr double kHalfResolution = 0x1p-11;

Policy policy_named(const std::string& name) {
  if (name == "lfa") return Policy::lfa(0.05);
  if (name == "sinks") return Policy::fifo();
  return Policy{*parse_policy(name), 0.0, {}};
}

LayerConfig fp16_config(const std::string& policy, const AttentionShape& shape, uint32_t M, uint32_t K) {
  LayerConfig c;
  c.shape = shape;
  c.chunk = 16;
  c.q_capacity = 21;
  c.kv.capacity = M;
  c.kv.policy = policy_named(policy);
  c.kv.n_sink = policy == "sinks" ? 4 : 0;
  c.kv.storage = MemoryStorage::f16;
  c.retrieval.top_k = K;
  return c;
}

void check_layer(Context& context, const LayerConfig& config, uint32_t rows, uint64_t seed, const std::string& label) {
  test::StreamOptions options;
  options.invalid_fraction = 0.05;
  for (int attempt = 0; attempt < 12; ++attempt) {
    const test::Stream stream = test::random_stream(config.shape, rows, seed * 131 + attempt, options);
    reference::Layer cpu(config);
    const auto expected = test::run_stream(cpu, stream);
    if (cpu.kv_memory().min_decision_gap() < kHalfResolution && attempt < 11) continue;  // the rule above
    auto device_owner = gpu::Layer::create(context, config).value_or_throw();
    gpu::Layer& device = *device_owner;
    const auto actual = test::run_stream(device, stream);
    test::check_runs_match(expected, actual, 2e-4, 2e-4, label);
    test::check_no_validation_messages(context);
    return;
  }
}

}  // namespace

TEST_CASE("fp16 memory: stored values round to nearest even with fp16 subnormals flushed") {
  CHECK(half::to_stored_half(1.0f + 0x1p-11f) == 0x3C00u);               // a tie: to the even 1.0
  CHECK(half::to_stored_half(1.0f + 3 * 0x1p-11f) == 0x3C02u);           // a tie: to the even 1 + 2^-9
  CHECK(half::to_stored_half(65504.0f) == 0x7BFFu);
  CHECK(half::to_stored_half(-0x1p-15f) == 0x8000u);                     // an fp16 subnormal: -0
  CHECK(half::to_stored_half(0x1p-14f * (1.0f - 0x1p-12f)) == 0x0400u);  // rounds up to the smallest normal
  CHECK(half::stored_value(0.1, MemoryStorage::f16) == 0.0999755859375);  // 0x2E66, exactly
  CHECK(half::stored_value(0.1, MemoryStorage::f32) == 0.1);
}

TEST_CASE("fp16 memory: the layer matches the rounding reference under every policy, on both load paths") {
  // M = 150 spans three 64-entry select tiles; D = 40 spans score's 16-wide
  // slices; {3, 1, 15} has odd rows (kv_row 15, q_row 45), padded in fp16.
  struct Path {
    const char* name;
    Context* context;
  };
  uint64_t seed = 1600;
  for (const Path& path :
       {Path{"16-bit loads where present", &test::tiny_gpu()}, Path{"unpackHalf2x16", &test::tiny_words_gpu()}})
    for (const char* policy : {"fifo", "lru", "lra_sum", "lfa", "sinks"}) {
      const LayerConfig config = fp16_config(policy, {4, 2, 40}, 150, 19);
      check_layer(*path.context, config, 200, ++seed, std::string(path.name) + " " + policy + " {4, 2, 40}");
    }
  for (const char* policy : {"lru", "lra_sum"}) {
    LayerConfig config = fp16_config(policy, {3, 1, 15}, 37, 9);
    config.kv.copy_out_evicted = true;
    check_layer(test::tiny_words_gpu(), config, 90, ++seed, std::string("odd rows ") + policy);
    check_layer(test::gpu(), config, 90, ++seed, std::string("odd rows, default context ") + policy);
  }
}

TEST_CASE("fp16 memory: outputs are the fp32 outputs within fp16 rounding, and differ from them") {
  // Stored rounding moves each q, k, v by at most 2^-11 relative: outputs
  // stay within 1e-2 (absolute, values ~1) of the fp32 memory's, and the
  // fp16 run is not secretly fp32 (some output differs by more than 1e-6).
  LayerConfig config = fp16_config("fifo", {4, 2, 16}, 64, 64);  // full attention: no decision can flip
  LayerConfig wide = config;
  wide.kv.storage = MemoryStorage::f32;
  const test::Stream stream = test::random_stream(config.shape, 80, 77);
  auto half_layer_owner = gpu::Layer::create(test::gpu(), config).value_or_throw();
  gpu::Layer& half_layer = *half_layer_owner;
  auto float_layer_owner = gpu::Layer::create(test::gpu(), wide).value_or_throw();
  gpu::Layer& float_layer = *float_layer_owner;
  const auto h = test::run_stream(half_layer, stream), f = test::run_stream(float_layer, stream);
  REQUIRE(h.size() == f.size());
  double largest = 0.0;
  for (size_t t = 0; t < h.size(); ++t) {
    REQUIRE(h[t].outputs.size() == f[t].outputs.size());
    for (size_t i = 0; i < h[t].outputs.size(); ++i) largest = std::max(largest, double(std::abs(h[t].outputs[i] - f[t].outputs[i])));
  }
  CHECK(largest < 1e-2);
  CHECK(largest > 1e-6);
  test::check_no_validation_messages(test::gpu());
}

TEST_CASE("fp16 memory: the K/V memory alone inserts, copies out and retrieves as the reference") {
  AttentionShape shape{4, 2, 12};
  KvMemoryConfig kv;
  kv.capacity = 20;
  kv.policy = Policy::lra_sum();
  kv.copy_out_evicted = true;
  kv.protect_new = false;
  kv.storage = MemoryStorage::f16;
  RetrievalConfig retrieval;
  retrieval.top_k = 7;
  for (Context* context : {&test::gpu(), &test::tiny_words_gpu()}) {
    auto device_owner = gpu::KeyValueMemory::create(*context, shape, kv, retrieval, 8, 8).value_or_throw();
    gpu::KeyValueMemory& device = *device_owner;
    reference::KeyValueMemory ref(shape, kv, 8);
    const test::Stream stream = test::random_stream(shape, 64, 5);
    for (uint32_t first = 0; first < 64; first += 8) {
      const EvictedEntries e = ref.insert(stream.chunk(first, 8));
      const EvictedEntries a = device.insert(stream.chunk(first, 8)).value_or_throw();
      REQUIRE(e.positions == a.positions);
      REQUIRE(e.keys.size() == a.keys.size());
      // Copied out as stored: the rounded fp16 values, exactly.
      for (size_t i = 0; i < e.keys.size(); ++i) CHECK(a.keys[i] == e.keys[i]);
      for (size_t i = 0; i < e.values.size(); ++i) CHECK(a.values[i] == e.values[i]);
      // The device's queries wait in its fp16 ring: the reference batch holds them rounded.
      const ChunkView queries = stream.chunk(first, 8);
      reference::QueryBatch batch;
      for (uint32_t r = 0; r < 8; ++r) {
        if (!queries.valid.empty() && queries.valid[r] == 0) continue;
        batch.positions.push_back(queries.positions[r]);
        batch.tags.push_back(0);
        for (uint32_t i = 0; i < shape.q_row(); ++i)
          batch.q.push_back(half::stored_value(queries.q[r * shape.q_row() + i], MemoryStorage::f16));
      }
      const reference::Retrieval retrieved = ref.retrieve(batch, retrieval, 1.0 / std::sqrt(12.0));
      ref.update_scores(batch, retrieved);
      const std::vector<double>& expected = retrieved.outputs;
      const std::vector<float> actual = device.retrieve(queries).value_or_throw();
      REQUIRE(expected.size() == actual.size());
      for (size_t i = 0; i < expected.size(); ++i) CHECK(actual[i] == doctest::Approx(expected[i]).epsilon(2e-4).scale(1.0));
    }
    test::check_no_validation_messages(*context);
  }
}

TEST_CASE("fp16 memory: inputs beyond fp16's range are refused naming row and column, by both backends") {
  LayerConfig config = fp16_config("fifo", {2, 1, 4}, 8, 8);
  config.chunk = 4;
  test::Stream stream = test::random_stream(config.shape, 4, 3);
  stream.k[1 * 4 + 2] = 70000.0f;  // row 1, column 2
  const std::string expected = "chunk k row 1 column 2 holds 70000, beyond the fp16 range (65504) of the memory's storage";
  reference::Layer cpu(config);
  auto device_owner = gpu::Layer::create(test::gpu(), config).value_or_throw();
  gpu::Layer& device = *device_owner;
  for (AttendreLayer* layer : {static_cast<AttendreLayer*>(&cpu), static_cast<AttendreLayer*>(&device)}) {
    try {
      layer->step(stream.chunk(0, 4)).value_or_throw();
      FAIL("accepted a key beyond fp16's range");
    } catch (const Error& e) {
      CHECK(e.code() == ErrorCode::invalid_argument);
      CHECK_MESSAGE(std::string(e.what()).find(expected) != std::string::npos, std::string(e.what()));
    }
  }
  stream.k[1 * 4 + 2] = 65504.0f;  // the largest fp16 is accepted
  CHECK_NOTHROW(device.step(stream.chunk(0, 4)).value_or_throw());
  config.kv.storage = MemoryStorage::f32;  // fp32 memories take it
  stream.k[1 * 4 + 2] = 70000.0f;
  auto wide_owner = gpu::Layer::create(test::gpu(), config).value_or_throw();
  gpu::Layer& wide = *wide_owner;
  CHECK_NOTHROW(wide.step(stream.chunk(0, 4)).value_or_throw());
}

TEST_CASE("fp16 memory: keys, values and queries take half the bytes") {
  const AttentionShape shape{8, 2, 64};
  const gpu::KvLayout f32 = gpu::KvLayout::make(512, shape).value_or_throw();
  const gpu::KvLayout f16 = gpu::KvLayout::make(512, shape, 1, {}, MemoryStorage::f16).value_or_throw();
  CHECK(f32.values - f32.keys == 512ull * 128);  // words
  CHECK(f16.values - f16.keys == 512ull * 64);
  const gpu::RingLayout r32 = gpu::RingLayout::make(256, shape).value_or_throw();
  const gpu::RingLayout r16 = gpu::RingLayout::make(256, shape, 0, 1, MemoryStorage::f16, 64).value_or_throw();
  CHECK(r32.positions - r32.queries == 256ull * 512);
  CHECK(r16.positions - r16.queries == 256ull * 256);
  CHECK(r16.words - r16.incoming == 64ull * 512);  // the fp32 rows of one chunk, before they are stored
  const gpu::KvLayout odd = gpu::KvLayout::make(3, {3, 1, 15}, 1, {}, MemoryStorage::f16).value_or_throw();
  CHECK(odd.key_stride == 16);  // rows padded to whole words
}
