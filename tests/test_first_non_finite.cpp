// When more than one step in flight computed a non-finite value, a device
// object reports the first of them (in submission order) first: the layer
// (gpu::StepExecutor; it once walked its two slots in index order and
// reported a later step's NaN first, and its wait before a submit once
// read the slot's step before an earlier recorded one) and the K/V memory
// (the same executor, one slot), whose NaN values come from an
// application's buffers. The stack's case is in tests/test_numerics.cpp,
// the encoder-decoder's in tests/test_activation_overflow.cpp (their NaN
// come from the weights).
#include "app_device.hpp"
#include "support.hpp"
#include "vulkan/api.hpp"

#include <attendre/error.hpp>
#include <attendre/gpu.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <limits>
#include <string>

namespace attendre {
namespace {

bool starts_with(const Status& status, const std::string& prefix) {
  return status.message().rfind(prefix, 0) == 0;
}

// The host's chunks are checked (finite, within the ranges that keep the
// device's float32 arithmetic finite), so the non-finite values come from
// the application's buffers, which the host never sees: NaN values stored
// into the K/V memory by a recorded step, which every later step attends to.
LayerConfig layer_config() {
  LayerConfig c;
  c.shape = {2, 1, 8};
  c.chunk = 4;
  c.q_capacity = 0;  // each step's queries retrieve in that step
  c.kv.capacity = 20;  // no entry is evicted
  c.kv.policy = Policy::fifo();
  c.retrieval.top_k = 20;  // every entry, the NaN ones included
  return c;
}

// The application's buffers of a recorded chunk of 4 rows, its values NaN.
struct NanRows {
  test::AppBuffer q, k, v;
  explicit NanRows(const test::App& app, const AttentionShape& shape)
      : q(app, 4ull * shape.q_row() * 4, false), k(app, 4ull * shape.kv_row() * 4, false),
        v(app, 4ull * shape.kv_row() * 4, false) {}
  // Records the updates of q and k from `chunk` and v as NaN into the app's command buffer.
  void fill(VkCommandBuffer cb, const ChunkView& chunk) const {
    const std::vector<float> nan(chunk.v.size(), std::numeric_limits<float>::quiet_NaN());
    vk::vkCmdUpdateBuffer(cb, q.buffer, 0, chunk.q.size_bytes(), chunk.q.data());
    vk::vkCmdUpdateBuffer(cb, k.buffer, 0, chunk.k.size_bytes(), chunk.k.data());
    vk::vkCmdUpdateBuffer(cb, v.buffer, 0, nan.size() * 4, nan.data());
  }
  BufferRange range(const test::AppBuffer& b, uint64_t bytes) const { return BufferRange{b.buffer, 0, bytes}; }
};

// Records a step of `layer` into the app's command buffer, its values NaN
// from the application's buffers, and submits it.
void record_nan_step(test::App& app, gpu::Layer& layer, const ChunkView& chunk) {
  NanRows rows(app, layer.config().shape);
  app.begin();
  rows.fill(app.cb, chunk);
  gpu::LayerInputs in;
  in.chunk = chunk;
  in.chunk.q = in.chunk.k = in.chunk.v = {};
  in.q = rows.range(rows.q, chunk.q.size_bytes());
  in.k = rows.range(rows.k, chunk.k.size_bytes());
  in.v = rows.range(rows.v, chunk.v.size_bytes());
  layer.record(app.cb, in).value_or_throw();
  app.submit_and_wait();
}

TEST_CASE("first non-finite: a layer with two steps in flight reports the earlier one's non-finite values first") {
  const LayerConfig config = layer_config();
  const test::Stream stream = test::random_stream(config.shape, 20, 120);
  test::App app;
  {
    auto context_owner = Context::adopt(app.external()).value_or_throw();
    auto layer_owner = gpu::Layer::create(*context_owner, config).value_or_throw();
    gpu::Layer& layer = *layer_owner;
    CHECK_NOTHROW(layer.result(layer.submit(stream.chunk(0, 4)).value_or_throw()).value_or_throw());  // step 0: finite
    record_nan_step(app, layer, stream.chunk(4, 4));  // step 1, recorded, stores NaN values
    const Status recorded = layer.wait();
    INFO(recorded.message());
    CHECK(starts_with(recorded, "a recorded step before step 2: non-finite values"));
    // Steps 2, 3 and 4 attend to them: step 2 (slot 0) collected, then
    // steps 3 (slot 1) and 4 (slot 0) in flight at once.
    const Result<StepResult> second = layer.result(layer.submit(stream.chunk(8, 4)).value_or_throw());
    REQUIRE(!second.ok());
    CHECK(starts_with(second.status(), "step 2: non-finite values"));
    const Ticket third = layer.submit(stream.chunk(12, 4)).value_or_throw();
    const Ticket fourth = layer.submit(stream.chunk(16, 4)).value_or_throw();
    CHECK(third.step() == 3);
    CHECK(fourth.step() == 4);
    const Status waited = layer.wait();
    REQUIRE(!waited.ok());
    CHECK(waited.code() == ErrorCode::numerical_error);
    INFO(waited.message());
    CHECK(starts_with(waited, "step 3: non-finite values (NaN or infinity) in the attention outputs"));
  }
  app.check_no_messages();
}

TEST_CASE("first non-finite: a layer's wait before a submit reports an earlier recorded step before the slot's step") {
  const LayerConfig config = layer_config();
  const test::Stream stream = test::random_stream(config.shape, 16, 123);
  test::App app;
  {
    auto context_owner = Context::adopt(app.external()).value_or_throw();
    auto layer_owner = gpu::Layer::create(*context_owner, config).value_or_throw();
    gpu::Layer& layer = *layer_owner;
    record_nan_step(app, layer, stream.chunk(0, 4));  // step 0, recorded: its checks read at the next wait
    // Steps 1 (slot 1) and 2 (slot 0) attend to the NaN values, submitted
    // without waiting; step 3 waits for slot 1's step 1 first, and the
    // recorded step 0 comes before it.
    const Ticket first = layer.submit(stream.chunk(4, 4)).value_or_throw();
    const Ticket second = layer.submit(stream.chunk(8, 4)).value_or_throw();
    CHECK(first.step() == 1);
    CHECK(second.step() == 2);
    const Result<Ticket> third = layer.submit(stream.chunk(12, 4));
    REQUIRE(!third.ok());
    CHECK(third.status().code() == ErrorCode::numerical_error);
    INFO(third.status().message());
    CHECK(starts_with(third.status(), "a recorded step before step 1: non-finite values"));
    // Then step 1's own, and step 2's at the next wait.
    const Status next = layer.wait();
    INFO(next.message());
    CHECK(starts_with(next, "step 1: non-finite values"));
  }
  app.check_no_messages();
}

TEST_CASE("first non-finite: a K/V memory reports a recorded call's non-finite values before a later retrieval's") {
  const LayerConfig config = layer_config();
  const test::Stream keys = test::random_stream(config.shape, 4, 121);
  test::Stream queries = test::random_stream(config.shape, 4, 122);
  std::fill(queries.positions.begin(), queries.positions.end(), keys.positions.back());  // past every key
  test::App app;
  {
    auto context_owner = Context::adopt(app.external()).value_or_throw();
    Context& context = *context_owner;
    auto memory_owner = gpu::KeyValueMemory::create(context, config.shape, config.kv, config.retrieval, 4, 4).value_or_throw();
    gpu::KeyValueMemory& memory = *memory_owner;
    // Retrieval 0, recorded into the application's command buffer after an
    // insert of NaN values, and retrieval 1, blocking, both attend to them.
    NanRows rows(app, config.shape);
    const ChunkView chunk = keys.chunk(0, 4);
    ChunkView inserted = chunk;
    inserted.q = inserted.k = inserted.v = {};
    app.begin();
    rows.fill(app.cb, chunk);
    memory.record_insert(app.cb, inserted, rows.range(rows.k, chunk.k.size_bytes()),
                         rows.range(rows.v, chunk.v.size_bytes())).or_throw();
    memory.record_retrieve(app.cb, queries.chunk(0, 4), std::nullopt, gpu::LayerOutputs{}).value_or_throw();
    app.submit_and_wait();
    const Result<std::vector<float>> later = memory.retrieve(queries.chunk(0, 4));
    REQUIRE(!later.ok());
    CHECK(later.status().code() == ErrorCode::numerical_error);
    INFO(later.status().message());
    CHECK(starts_with(later.status(), "a recorded call before retrieval 1: non-finite values"));
  }
  app.check_no_messages();
}

}  // namespace
}  // namespace attendre
