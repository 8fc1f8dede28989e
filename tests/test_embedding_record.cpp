// Embedding, record() beyond the layer's step: the K/V memory's insert and
// retrieve, and the stack's flush and decode steps, recorded into an
// application's own command buffers with its own buffers, checked against
// the blocking path (bit for bit: same device, same kernels) and the
// float64 reference; and the refusals of bad ranges, after which the
// object goes on as if the bad call never happened.
#include "app_device.hpp"
#include "stack_support.hpp"
#include "support.hpp"
#include "vulkan/api.hpp"

#include <attendre/error.hpp>
#include <attendre/gpu.hpp>
#include <attendre/gpu_stack.hpp>
#include <attendre/reference/stack.hpp>

#include <doctest/doctest.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

using namespace attendre;

namespace {

using namespace attendre::vk;
using test::App;
using test::AppBuffer;
using test::read_back;

}  // namespace

TEST_CASE("embedding: K/V memory inserts and retrievals recorded with the application's buffers equal the blocking path") {
  const AttentionShape shape{4, 2, 20};  // rows of 80 and 40 floats, off every power of two
  KvMemoryConfig kv;
  kv.capacity = 13;
  kv.policy = Policy::lra_sum();
  RetrievalConfig retrieval;
  retrieval.top_k = 5;
  const uint32_t max_insert = 6, max_queries = 7;
  test::StreamOptions options;
  options.invalid_fraction = 0.2;
  const test::Stream keys = test::random_stream(shape, 60, 71, options);
  const test::Stream queries = test::random_stream(shape, 60, 72, options);
  const uint32_t q_row = shape.q_row(), kv_row = shape.kv_row();

  App app;
  // fp16 memories: the application's q rows go through the ring's fp32
  // incoming section, its k and v rows through the insert's conversion.
  for (const MemoryStorage storage : {MemoryStorage::f32, MemoryStorage::f16}) {
    INFO("storage " << to_string(storage));
    kv.storage = storage;
    auto context_owner = Context::adopt(app.external()).value_or_throw();
    Context& context = *context_owner;
    auto blocking_owner = gpu::KeyValueMemory::create(context, shape, kv, retrieval, max_insert, max_queries).value_or_throw();
    gpu::KeyValueMemory& blocking = *blocking_owner;
    auto recorded_owner = gpu::KeyValueMemory::create(context, shape, kv, retrieval, max_insert, max_queries).value_or_throw();
    gpu::KeyValueMemory& recorded = *recorded_owner;
    const VkDeviceSize k_at = 8, v_at = 36, q_at = 4, out_at = 20;  // sub-allocations off the buffers' starts
    const VkDeviceSize kv_bytes = uint64_t{max_insert} * kv_row * 4, q_bytes = uint64_t{max_queries} * q_row * 4;
    AppBuffer k(app, k_at + kv_bytes, false), v(app, v_at + kv_bytes, false), q(app, q_at + q_bytes, false),
        out(app, out_at + q_bytes, false), staging(app, q_bytes, true), readback(app, q_bytes, true);
    std::mt19937_64 rng(5);
    uint32_t k_first = 0, q_first = 0;
    for (uint32_t call = 0; k_first + max_insert <= keys.rows && q_first + max_queries <= queries.rows; ++call) {
      INFO("call " << call);
      const uint32_t insert_rows = 1 + static_cast<uint32_t>(rng() % max_insert);
      const uint32_t query_rows = 1 + static_cast<uint32_t>(rng() % max_queries);
      const ChunkView inserted = keys.chunk(k_first, insert_rows);
      ChunkView asked = queries.chunk(q_first, query_rows);
      std::vector<int64_t> at(query_rows, inserted.positions[insert_rows - 1]);  // past the inserted keys
      asked.positions = at;
      k_first += insert_rows;
      q_first += query_rows;
      const bool from_buffers = call % 2 == 0;  // else the host's spans travel inside the command buffer

      blocking.insert(inserted).value_or_throw();
      const std::vector<float> want = blocking.retrieve(asked).value_or_throw();

      app.begin();
      ChunkView insert_in = inserted, query_in = asked;
      std::optional<BufferRange> k_range, v_range, q_range;
      if (from_buffers) {
        vkCmdUpdateBuffer(app.cb, k.buffer, k_at, inserted.k.size_bytes(), inserted.k.data());
        vkCmdUpdateBuffer(app.cb, v.buffer, v_at, inserted.v.size_bytes(), inserted.v.data());
        std::memcpy(staging.mapped, asked.q.data(), asked.q.size_bytes());
        test::copy(app.cb, staging, 0, q, q_at, asked.q.size_bytes());
        insert_in.k = insert_in.v = {};
        query_in.q = {};
        k_range = BufferRange{k.buffer, k_at, inserted.k.size_bytes()};
        v_range = BufferRange{v.buffer, v_at, inserted.v.size_bytes()};
        q_range = BufferRange{q.buffer, q_at, asked.q.size_bytes()};
      }
      recorded.record_insert(app.cb, insert_in, k_range, v_range).or_throw();
      gpu::LayerOutputs outputs;
      outputs.outputs = BufferRange{out.buffer, out_at, q_bytes};
      outputs.consumer = {VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_READ_BIT};
      const gpu::RecordedStep step = recorded.record_retrieve(app.cb, query_in, q_range, outputs).value_or_throw();
      const VkDeviceSize bytes = step.emitted_positions.size() * q_row * 4;
      read_back(app.cb, out, out_at, readback, bytes);
      app.submit_and_wait();

      std::vector<int64_t> valid_positions;
      for (uint32_t r = 0; r < query_rows; ++r)
        if (asked.valid[r]) valid_positions.push_back(at[r]);
      CHECK(step.emitted_positions == valid_positions);
      const auto* floats = static_cast<const float*>(readback.mapped);
      CHECK(std::vector<float>(floats, floats + bytes / 4) == want);
      if (call % 3 == 2) {  // the blocking calls wait for the recorded ones first
        const MemorySnapshot a = recorded.snapshot().value_or_throw(), b = blocking.snapshot().value_or_throw();
        CHECK(a.positions == b.positions);
        CHECK(a.scores == b.scores);
      }
    }
    const MemorySnapshot a = recorded.snapshot().value_or_throw(), b = blocking.snapshot().value_or_throw();
    CHECK(a.positions == b.positions);
    CHECK(a.scores == b.scores);
    CHECK(b.positions.size() == kv.capacity);  // it evicted
  }
  app.check_no_messages();
}

namespace {

// A stack without a vocabulary, so that its input rows (embeddings) come
// from the application's buffer and its final hidden rows go to another.
StackConfig embedding_stack() {
  StackConfig c = test::small_stack(3, {4, 2, 6}, 5, 3, 14, 5, Policy::lru());
  c.vocab = 0;
  c.blocks[1].attention.q_capacity = 6;  // past S: a flush of block 1 emits more rows than a chunk
  c.flush_capable = true;
  return c;
}

std::vector<float> random_rows(uint32_t rows, uint32_t width, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> out(uint64_t{rows} * width);
  for (float& x : out) x = u(rng);
  return out;
}

}  // namespace

TEST_CASE("embedding: stack steps, flushes and decodes recorded with the application's buffers match the reference") {
  const StackConfig c = embedding_stack();
  const uint32_t S = c.chunk, H = c.hidden, rows = 23;
  const std::vector<float> embeddings = random_rows(rows + 1, H, 9);  // the last row for decode
  std::vector<int64_t> positions(rows + 1);
  for (uint32_t r = 0; r <= rows; ++r) positions[r] = r;
  std::vector<uint8_t> valid(rows + 1, 1);
  valid[3] = valid[11] = 0;
  auto chunk_at = [&](uint32_t first, uint32_t n) {
    StackChunk chunk;
    chunk.rows = n;
    chunk.embeddings = std::span<const float>(embeddings).subspan(uint64_t{first} * H, uint64_t{n} * H);
    chunk.positions = std::span<const int64_t>(positions).subspan(first, n);
    chunk.valid = std::span<const uint8_t>(valid).subspan(first, n);
    return chunk;
  };
  RandomWeights weights(13);
  reference::Stack cpu(c, weights);
  StackRequest request;
  request.hidden = true;

  App app;
  {
    auto context_owner = Context::adopt(app.external()).value_or_throw();
    Context& context = *context_owner;
    auto stack_owner = gpu::Stack::create(context, c, weights).value_or_throw();
    gpu::Stack& stack = *stack_owner;
    uint32_t room = S;
    for (const BlockConfig& b : c.blocks) room = std::max(room, b.attention.q_capacity);
    const VkDeviceSize in_at = 12, hidden_at = 28, in_bytes = uint64_t{S} * H * 4, hidden_bytes = uint64_t{room} * H * 4;
    AppBuffer input(app, in_at + in_bytes, false), hidden(app, hidden_at + hidden_bytes, false),
        readback(app, hidden_bytes, true);
    gpu::StackRecordOutputs out;
    out.hidden = BufferRange{hidden.buffer, hidden_at, hidden_bytes};
    out.consumer = {VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_READ_BIT};
    // Submits what `record` appended and reads the hidden rows back.
    auto run = [&](auto record) {
      app.begin();
      const gpu::RecordedStep step = record();
      const VkDeviceSize bytes = step.emitted_positions.size() * H * 4;
      read_back(app.cb, hidden, hidden_at, readback, bytes);
      app.submit_and_wait();
      StackOutput got;
      got.positions = step.emitted_positions;
      const auto* floats = static_cast<const float*>(readback.mapped);
      got.hidden.assign(floats, floats + bytes / 4);
      return got;
    };
    // The chunk's rows taken from the application's buffer.
    auto in_buffer = [&](const StackChunk& chunk) {
      gpu::StackRecordInputs in;
      in.chunk = chunk;
      in.chunk.embeddings = {};
      in.embeddings = BufferRange{input.buffer, in_at, chunk.embeddings.size_bytes()};
      return in;
    };
    // ... which the application's own command puts there first.
    auto from_buffer = [&](const StackChunk& chunk) {
      vkCmdUpdateBuffer(app.cb, input.buffer, in_at, chunk.embeddings.size_bytes(), chunk.embeddings.data());
      return in_buffer(chunk);
    };

    for (uint32_t first = 0, step = 0; first < rows; first += S, ++step) {
      const StackChunk chunk = chunk_at(first, std::min(S, rows - first));
      const StackOutput want = cpu.step(chunk, request).value_or_throw();
      const StackOutput got = run([&] { return stack.record(app.cb, from_buffer(chunk), out).value_or_throw(); });
      CHECK(got.positions == want.positions);
      test::check_stack_rows(want.hidden, got.hidden, "step " + std::to_string(step));
    }
    // finish(flush): block by block, recorded.
    const StackOutput want_flush = cpu.finish(request, true).value_or_throw();
    StackOutput got_flush;
    size_t most = 0;
    for (size_t block = 0; block < c.blocks.size(); ++block) {
      StackOutput part = run([&] { return stack.record_flush(app.cb, block, out).value_or_throw(); });
      most = std::max(most, part.positions.size());
      got_flush.append(std::move(part));
    }
    CHECK(most > S);  // a flush's outputs held more rows than a chunk
    CHECK_FALSE(stack.has_pending());
    CHECK(got_flush.positions == want_flush.positions);
    test::check_stack_rows(want_flush.hidden, got_flush.hidden, "flush");
    CHECK_THROWS_AS(stack.record_decode(app.cb, in_buffer(chunk_at(rows, 1)), out).value_or_throw(), Error);  // before finish()
    CHECK(stack.finish(request).value_or_throw().positions.empty());  // nothing left to run: marks the stack finished
    // Decode, recorded, with the embedding from the application's buffer.
    const StackOutput want_decode = cpu.decode(chunk_at(rows, 1), request).value_or_throw();
    const StackOutput got_decode = run([&] { return stack.record_decode(app.cb, from_buffer(chunk_at(rows, 1)), out).value_or_throw(); });
    CHECK(got_decode.positions == want_decode.positions);
    test::check_stack_rows(want_decode.hidden, got_decode.hidden, "decode");
    CHECK_THROWS_AS(stack.record_flush(app.cb, 0, out).value_or_throw(), Error);  // after finish()
  }
  app.check_no_messages();
}

TEST_CASE("embedding: record refuses bad ranges with one-line errors, and the object goes on unchanged") {
  App app;
  {
    auto context_owner = Context::adopt(app.external()).value_or_throw();
    Context& context = *context_owner;
    const AttentionShape shape{2, 1, 8};
    LayerConfig config;
    config.shape = shape;
    config.chunk = 4;
    config.q_capacity = 2;
    config.kv.capacity = 8;
    config.retrieval.top_k = 4;
    const test::Stream stream = test::random_stream(shape, 8, 3);
    const uint32_t q_row = shape.q_row(), kv_row = shape.kv_row(), S = config.chunk;
    AppBuffer buffer(app, 4096, false);
    auto layer_owner = gpu::Layer::create(context, config).value_or_throw();
    gpu::Layer& layer = *layer_owner;
    auto blocking_owner = gpu::Layer::create(context, config).value_or_throw();
    gpu::Layer& blocking = *blocking_owner;
    const ChunkView chunk = stream.chunk(0, S);
    gpu::LayerInputs host;  // q, k, v from the chunk's spans
    host.chunk = chunk;
    auto device_inputs = [&](VkDeviceSize q_offset, VkDeviceSize q_size) {
      gpu::LayerInputs in;
      in.chunk = chunk;
      in.chunk.q = in.chunk.k = in.chunk.v = {};
      in.q = BufferRange{buffer.buffer, q_offset, q_size};
      in.k = BufferRange{buffer.buffer, 1024, uint64_t{S} * kv_row * 4};
      in.v = BufferRange{buffer.buffer, 2048, uint64_t{S} * kv_row * 4};
      return in;
    };
    auto refused = [&](auto call, const char* words) {
      try {
        call();
        FAIL("accepted, expected a refusal naming '" << words << "'");
      } catch (const Error& e) {
        const std::string message = e.what();
        CHECK(e.code() == ErrorCode::invalid_argument);
        CHECK_MESSAGE(message.find(words) != std::string::npos, message);
        CHECK(message.find('\n') == std::string::npos);
      }
    };
    app.begin();
    refused([&] { layer.record(app.cb, device_inputs(0, uint64_t{S} * q_row * 4 - 4)).value_or_throw(); }, "q range holds");
    refused([&] { layer.record(app.cb, device_inputs(2, uint64_t{S} * q_row * 4)).value_or_throw(); }, "offset is not a multiple of 4");
    refused([&] { layer.record(app.cb, device_inputs(0, 0)).value_or_throw(); }, "q range holds 0 bytes");
    gpu::LayerInputs no_buffer = device_inputs(0, uint64_t{S} * q_row * 4);
    no_buffer.v->buffer = VK_NULL_HANDLE;
    refused([&] { layer.record(app.cb, no_buffer).value_or_throw(); }, "v range has no buffer");
    gpu::LayerInputs partial = device_inputs(0, uint64_t{S} * q_row * 4);
    partial.v.reset();
    refused([&] { layer.record(app.cb, partial).value_or_throw(); }, "all from the chunk or all from buffer ranges");
    gpu::LayerOutputs small;
    small.outputs = BufferRange{buffer.buffer, 0, uint64_t{S - 1} * q_row * 4};
    refused([&] { layer.record(app.cb, host, small).value_or_throw(); }, "outputs range holds");
    refused([&] { layer.record(VK_NULL_HANDLE, host).value_or_throw(); }, "no command buffer");
    ChunkView wrong = chunk;
    wrong.q = wrong.q.subspan(1);  // a q span of the wrong size
    gpu::LayerInputs wrong_in;
    wrong_in.chunk = wrong;
    CHECK_THROWS_AS(layer.record(app.cb, wrong_in).value_or_throw(), Error);
    // The stack and the K/V memory check their ranges the same way.
    auto memory_owner = gpu::KeyValueMemory::create(context, shape, config.kv, config.retrieval, S, S).value_or_throw();
    gpu::KeyValueMemory& memory = *memory_owner;
    refused([&] { memory.record_insert(app.cb, chunk, BufferRange{buffer.buffer, 0, 8}, std::nullopt).or_throw(); },
            "both from the chunk or both from buffer ranges");
    ChunkView keys_only = chunk;
    keys_only.k = keys_only.v = {};
    refused([&] { memory.record_insert(app.cb, keys_only, BufferRange{buffer.buffer, 0, 8}, BufferRange{buffer.buffer, 0, 8}).or_throw(); },
            "k range holds");
    gpu::LayerOutputs memory_out;
    memory_out.outputs = BufferRange{buffer.buffer, 6, uint64_t{S} * q_row * 4};
    refused([&] { memory.record_retrieve(app.cb, chunk, std::nullopt, memory_out).value_or_throw(); }, "offset is not a multiple of 4");
    StackConfig sc = test::small_stack(1, {2, 1, 8}, 4, 2, 8, 4, Policy::fifo());
    RandomWeights weights(3);
    auto stack_owner = gpu::Stack::create(context, sc, weights).value_or_throw();
    gpu::Stack& stack = *stack_owner;
    gpu::StackRecordInputs ids;
    const test::TokenStream tokens = test::random_tokens(4, sc.vocab, 1);
    ids.chunk = tokens.chunk(0, 4);
    ids.chunk.tokens = {};
    ids.tokens = BufferRange{buffer.buffer, 0, 12};
    refused([&] { stack.record(app.cb, ids).value_or_throw(); }, "tokens range holds 12 bytes, needs 16");
    refused([&] { stack.record_flush(app.cb, 1).value_or_throw(); }, "no block 1");
    // Nothing was recorded: the application's command buffer is empty and
    // every object goes on as if the refused calls never happened.
    app.submit_and_wait();
    for (uint32_t at = 0; at < stream.rows; at += S) {
      app.begin();
      gpu::LayerInputs in;
      in.chunk = stream.chunk(at, S);
      const gpu::RecordedStep recorded = layer.record(app.cb, in).value_or_throw();
      app.submit_and_wait();
      CHECK(recorded.emitted_positions == blocking.step(stream.chunk(at, S)).value_or_throw().emitted_positions);
    }
    layer.wait().or_throw();
    CHECK(layer.snapshot().value_or_throw().positions == blocking.snapshot().value_or_throw().positions);
    memory.insert(chunk).value_or_throw();
    CHECK(memory.snapshot().value_or_throw().positions.size() == S);
  }
  app.check_no_messages();
}
