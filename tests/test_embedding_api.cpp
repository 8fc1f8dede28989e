// Embedding: an application with its own instance, device, buffers and
// command buffers records layer steps and stack steps into them (q, k, v or
// token ids produced by its own commands, outputs read from its own
// buffers), checked against the float64 reference; steps submitted without blocking (tickets, two in
// flight) against the blocking path; and an adopted device never idled.
#include "app_device.hpp"
#include "stack_support.hpp"
#include "support.hpp"
#include "vulkan/api.hpp"

#include <attendre/error.hpp>
#include <attendre/gpu.hpp>
#include <attendre/gpu_stack.hpp>
#include <attendre/reference/layer.hpp>
#include <attendre/reference/stack.hpp>

#include <doctest/doctest.h>

#include <cstring>
#include <functional>
#include <optional>
#include <string>
#include <vector>

using namespace attendre;

namespace {

// The application calls the loaded entry points (vulkan/api.hpp), as the
// library does.
using namespace attendre::vk;
using test::App;
using test::AppBuffer;
using test::read_back;

LayerConfig embedding_config(PolicyKind policy, MemoryStorage storage = MemoryStorage::f32) {
  LayerConfig c;
  c.kv.storage = storage;
  c.shape = {4, 2, 20};  // GQA; rows of 80 and 40 floats, off every power of two
  c.chunk = 5;
  c.q_capacity = 7;      // not a multiple of S: evictions straddle chunks
  c.kv.capacity = 11;
  c.kv.policy = Policy{policy, 0.0, {}};
  c.retrieval.top_k = 4;
  return c;
}

// Steps `stream` through a layer recorded into the application's command
// buffers, against the reference. Even steps take q, k, v from the
// application's device buffers (filled by its own vkCmdCopyBuffer and
// vkCmdUpdateBuffer); odd steps hand them over from the host.
void check_recorded_stream(PolicyKind policy, uint64_t seed, MemoryStorage storage = MemoryStorage::f32) {
  const LayerConfig config = embedding_config(policy, storage);
  test::StreamOptions options;
  options.invalid_fraction = 0.2;
  const test::Stream stream = test::random_stream(config.shape, 43, seed, options);
  const uint32_t S = config.chunk, q_row = config.shape.q_row(), kv_row = config.shape.kv_row();

  App app;
  std::vector<test::StepRecord> expected, actual;
  {
    auto context_owner = Context::adopt(app.external()).value_or_throw();
    Context& context = *context_owner;
    auto layer_owner = gpu::Layer::create(context, config).value_or_throw();
    gpu::Layer& layer = *layer_owner;
    reference::Layer cpu(config);
    // Ranges start off the buffers' beginnings, as an application's sub-allocations would.
    const VkDeviceSize q_at = 16, k_at = 4, v_at = 260, out_at = 12;
    const VkDeviceSize q_bytes = uint64_t{S} * q_row * 4, kv_bytes = uint64_t{S} * kv_row * 4;
    AppBuffer staging(app, q_bytes + kv_bytes, true), readback(app, q_bytes, true);
    AppBuffer q(app, q_at + q_bytes, false), k(app, k_at + kv_bytes, false), v(app, v_at + kv_bytes, false),
        out(app, out_at + q_bytes, false);

    uint32_t at = 0;
    for (uint32_t step = 0; at < stream.rows || cpu.has_pending_queries(); ++step) {
      const uint32_t rows = std::min(S, stream.rows - at);
      const ChunkView chunk = stream.chunk(at, rows);
      at += rows;
      expected.push_back({});
      const StepResult want = cpu.step(chunk).value_or_throw();
      expected.back().emitted = want.emitted_positions;
      expected.back().outputs = want.outputs;

      app.begin();
      gpu::LayerInputs in;
      in.chunk = chunk;
      if (step % 2 == 0) {
        // The application produces q and k by copies from its staging, v by an update.
        std::memcpy(static_cast<char*>(staging.mapped), chunk.q.data(), chunk.q.size_bytes());
        std::memcpy(static_cast<char*>(staging.mapped) + q_bytes, chunk.k.data(), chunk.k.size_bytes());
        copy(app.cb, staging, 0, q, q_at, chunk.q.size_bytes());
        copy(app.cb, staging, q_bytes, k, k_at, chunk.k.size_bytes());
        if (!chunk.v.empty()) vkCmdUpdateBuffer(app.cb, v.buffer, v_at, chunk.v.size_bytes(), chunk.v.data());
        in.chunk.q = in.chunk.k = in.chunk.v = {};
        in.q = BufferRange{q.buffer, q_at, chunk.q.size_bytes()};
        in.k = BufferRange{k.buffer, k_at, chunk.k.size_bytes()};
        in.v = BufferRange{v.buffer, v_at, chunk.v.size_bytes()};
      }
      gpu::LayerOutputs outputs;
      outputs.outputs = BufferRange{out.buffer, out_at, q_bytes};
      outputs.consumer = {VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_READ_BIT};
      const gpu::RecordedStep recorded = layer.record(app.cb, in, outputs).value_or_throw();
      const VkDeviceSize emitted_bytes = recorded.emitted_positions.size() * q_row * 4;
      read_back(app.cb, out, out_at, readback, emitted_bytes);
      app.submit_and_wait();

      actual.push_back({});
      actual.back().emitted = recorded.emitted_positions;
      const auto* floats = static_cast<const float*>(readback.mapped);
      actual.back().outputs.assign(floats, floats + emitted_bytes / 4);
    }
    CHECK_FALSE(layer.has_pending_queries());
    layer.wait().or_throw();  // reads the recorded steps' finite checks
  }
  test::check_runs_match(expected, actual, 2e-4, 2e-4,
                         "recorded " + std::string(to_string(policy)) + " " + std::string(to_string(storage)));
  app.check_no_messages();
}

}  // namespace

TEST_CASE("embedding: layer steps recorded into the application's command buffers and buffers match the reference") {
  check_recorded_stream(PolicyKind::lra_sum, 11);
  check_recorded_stream(PolicyKind::fifo, 12);
  // fp16 memories: the application's q rows go through the ring's fp32 incoming section.
  check_recorded_stream(PolicyKind::lru, 13, MemoryStorage::f16);
}

TEST_CASE("embedding: stack steps recorded into the application's command buffers and buffers match the reference") {
  // Bounded memories that evict, N > 0 so emission lags the input, per-block N differ.
  StackConfig c = test::small_stack(2, {4, 2, 6}, 6, 7, 14, 5, Policy::lra_sum());
  c.blocks.back().attention.q_capacity = 4;
  const test::TokenStream s = test::random_tokens(31, c.vocab, 31, 0.05);
  const uint32_t S = c.chunk, V = c.vocab;
  RandomWeights weights(41);
  reference::Stack cpu(c, weights);
  StackRequest request;
  request.hidden = false;
  request.logits = true;

  App app;
  {
    auto context_owner = Context::adopt(app.external()).value_or_throw();
    Context& context = *context_owner;
    auto stack_owner = gpu::Stack::create(context, c, weights).value_or_throw();
    gpu::Stack& stack = *stack_owner;
    // Ranges start off the buffers' beginnings, as an application's sub-allocations would.
    const VkDeviceSize ids_at = 8, logits_at = 20, logits_bytes = uint64_t{S} * V * 4;
    AppBuffer ids(app, ids_at + S * 4, false), logits(app, logits_at + logits_bytes, false),
        readback(app, logits_bytes, true);
    // One recorded step: ids (if any) written by the application's
    // vkCmdUpdateBuffer, logits copied by its own consumer to its readback.
    auto record = [&](const StackChunk& chunk) {
      app.begin();
      gpu::StackRecordInputs in;
      in.chunk = chunk;
      if (chunk.rows > 0) {
        vkCmdUpdateBuffer(app.cb, ids.buffer, ids_at, chunk.tokens.size_bytes(), chunk.tokens.data());
        in.chunk.tokens = {};
        in.tokens = BufferRange{ids.buffer, ids_at, chunk.tokens.size_bytes()};
      }
      gpu::StackRecordOutputs out;
      out.logits = BufferRange{logits.buffer, logits_at, logits_bytes};
      out.consumer = {VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_READ_BIT};
      const gpu::RecordedStep recorded = stack.record(app.cb, in, out).value_or_throw();
      const VkDeviceSize bytes = recorded.emitted_positions.size() * V * 4;
      read_back(app.cb, logits, logits_at, readback, bytes);
      app.submit_and_wait();
      StackOutput got;
      got.positions = recorded.emitted_positions;
      const auto* floats = static_cast<const float*>(readback.mapped);
      got.logits.assign(floats, floats + bytes / 4);
      return got;
    };

    size_t emitted = 0;
    uint32_t step = 0;
    for (uint32_t first = 0; first < s.rows(); first += S, ++step) {
      const StackChunk chunk = s.chunk(first, std::min(S, s.rows() - first));
      const StackOutput want = cpu.step(chunk, request).value_or_throw();
      const StackOutput got = record(chunk);
      CHECK(got.positions == want.positions);
      test::check_stack_rows(want.logits, got.logits, "step " + std::to_string(step));
      emitted += got.positions.size();
    }
    CHECK(emitted < s.rows());  // emission lags: positions still wait in the Q rings
    // Drained by recorded steps of no rows, as finish() would.
    const StackOutput want = cpu.finish(request).value_or_throw();
    StackOutput got;
    while (stack.has_pending()) got.append(record(StackChunk{}));
    CHECK(got.positions == want.positions);
    test::check_stack_rows(want.logits, got.logits, "drain");
    // The ordinary API goes on after recorded steps (it waits for them first).
    CHECK(stack.finish(request).value_or_throw().positions.empty());
    const test::OnePosition one{5, s.rows()};
    const StackOutput want_decode = cpu.decode(one.chunk(), request).value_or_throw();
    const StackOutput got_decode = stack.decode(one.chunk(), request).value_or_throw();
    CHECK(got_decode.positions == want_decode.positions);
    test::check_stack_rows(want_decode.logits, got_decode.logits, "decode");
  }
  app.check_no_messages();
}

TEST_CASE("embedding: two steps in flight (tickets, double-buffered staging) equal the blocking path") {
  Context& context = test::gpu();
  const LayerConfig config = embedding_config(PolicyKind::lra_sum);
  test::StreamOptions options;
  options.invalid_fraction = 0.1;
  const test::Stream stream = test::random_stream(config.shape, 47, 21, options);
  const uint32_t S = config.chunk;
  auto blocking_owner = gpu::Layer::create(context, config).value_or_throw();
  gpu::Layer& blocking = *blocking_owner;
  auto pipelined_owner = gpu::Layer::create(context, config).value_or_throw();
  gpu::Layer& pipelined = *pipelined_owner;
  std::vector<ChunkView> chunks;
  for (uint32_t at = 0; at < stream.rows; at += S) chunks.push_back(stream.chunk(at, std::min(S, stream.rows - at)));

  std::vector<StepResult> want, got;
  for (const ChunkView& chunk : chunks) want.push_back(blocking.step(chunk).value_or_throw());
  // The host packs step t+1 while the device may still run step t.
  std::vector<Ticket> tickets;
  tickets.push_back(pipelined.submit(chunks[0]).value_or_throw());
  for (size_t t = 0; t < chunks.size(); ++t) {
    if (t + 1 < chunks.size()) tickets.push_back(pipelined.submit(chunks[t + 1]).value_or_throw());
    CHECK(tickets[t].step() == t);
    CHECK(tickets[t].wait().value_or_throw());
    CHECK(tickets[t].ready().value_or_throw());
    got.push_back(pipelined.result(tickets[t]).value_or_throw());
  }
  REQUIRE(got.size() == want.size());
  for (size_t t = 0; t < want.size(); ++t) {
    CHECK(got[t].emitted_positions == want[t].emitted_positions);
    CHECK(got[t].outputs == want[t].outputs);  // same device, same kernels: bit for bit
  }
  // A ticket's result is collected once.
  CHECK_THROWS_AS(pipelined.result(tickets.back()).value_or_throw(), Error);
  // Two steps ahead overwrote the first's staging: its result is refused.
  const Ticket first = pipelined.submit({}).value_or_throw();
  pipelined.submit({}).value_or_throw();
  pipelined.submit({}).value_or_throw();
  CHECK_THROWS_AS(pipelined.result(first).value_or_throw(), Error);
  pipelined.wait().or_throw();
  test::check_no_validation_messages(context);
}

namespace {

// The application's own barrier before reading what an earlier submission
// of attendre's wrote, when it waited for the ticket on the host rather
// than on the device.
void after_host_wait(VkCommandBuffer cb) {
  VkMemoryBarrier barrier{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
  barrier.srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT;
  barrier.dstAccessMask = VK_ACCESS_TRANSFER_READ_BIT;
  vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_TRANSFER_BIT, 0, 1, &barrier, 0, nullptr,
                       0, nullptr);
}

// The code the call was refused with (none: it was accepted).
std::optional<ErrorCode> code_of(const std::function<void()>& call) {
  try {
    call();
  } catch (const Error& e) {
    return e.code();
  }
  return std::nullopt;
}

}  // namespace

TEST_CASE("embedding: tickets chain on timeline semaphores, or fall back to fences with host waits") {
  App app;
  const LayerConfig config = embedding_config(PolicyKind::lra_sum);
  test::StreamOptions options;
  options.invalid_fraction = 0.1;
  const test::Stream stream = test::random_stream(config.shape, 24, 61, options);
  const uint32_t S = config.chunk, q_row = config.shape.q_row();
  const VkDeviceSize out_at = 16, out_bytes = uint64_t{S} * q_row * 4;
  // The application's semaphore the steps wait for. It outlives the loop:
  // lavapipe (Mesa 22.3) still touches a semaphore a submission waited for
  // after that submission's fence signalled, so destroying it right away
  // can crash the driver's queue thread.
  std::optional<test::AppTimeline> gate;
  uint64_t gate_value = 0;
  // Both ways on one device: the context's default (timeline semaphores when
  // the device has them and ATTENDRE_DISABLE leaves them on), then the
  // fallback with the switch off.
  for (const bool switched_off : {false, true}) {
    INFO("timeline switched off: " << switched_off);
    ExternalDevice external = app.external();
    if (switched_off) external.disabled_features = FeatureSet{}.add(Feature::timeline_semaphore);
    auto context_owner = Context::adopt(external).value_or_throw();
    Context& context = *context_owner;
    const bool chains = context.caps().timeline_semaphore;
    if (switched_off || !app.timeline) CHECK_FALSE(chains);
    auto layer_owner = gpu::Layer::create(context, config).value_or_throw();
    gpu::Layer& layer = *layer_owner;
    auto blocking_owner = gpu::Layer::create(context, config).value_or_throw();
    gpu::Layer& blocking = *blocking_owner;
    auto other_owner = gpu::Layer::create(context, config).value_or_throw();
    gpu::Layer& other = *other_owner;
    AppBuffer out(app, out_at + out_bytes, false), readback(app, out_bytes, true);
    if (chains && !gate) gate.emplace(app);
    for (uint32_t at = 0; at < stream.rows; at += S) {
      const ChunkView chunk = stream.chunk(at, std::min(S, stream.rows - at));
      const StepResult want = blocking.step(chunk).value_or_throw();
      SubmitOptions submit;
      submit.outputs = BufferRange{out.buffer, out_at, out_bytes};
      // The step waits for the application's semaphore (its earlier work).
      if (chains) submit.waits.push_back({gate->semaphore, ++gate_value, VK_PIPELINE_STAGE_TRANSFER_BIT});
      const Ticket ticket = layer.submit(chunk, {}, submit).value_or_throw();
      CHECK(ticket.chainable() == chains);
      const VkDeviceSize bytes = want.emitted_positions.size() * q_row * 4;
      app.begin();
      if (chains) {
        CHECK(ticket.value() > 0);
        // Not before the application's semaphore: the step waits on the
        // device, and its timeline is short of the ticket's value (a device
        // running submissions in order, as lavapipe does, would hide a
        // ticket naming an earlier value from the copy's result alone).
        CHECK_FALSE(ticket.ready().value_or_throw());
        CHECK_FALSE(ticket.wait(0).value_or_throw());
        CHECK(app.counter(ticket.semaphore()) < ticket.value());
        // The application's copy of the outputs waits for the ticket on the
        // device; the host only signals the gate and waits for the copy.
        read_back(app.cb, out, out_at, readback, bytes);
        app.submit(ticket.semaphore(), ticket.value());
        gate->signal(gate_value);
        app.wait();
        CHECK(ticket.ready().value_or_throw());
        CHECK(app.counter(ticket.semaphore()) == ticket.value());
      } else {
        CHECK(ticket.semaphore() == VK_NULL_HANDLE);
        CHECK(ticket.wait().value_or_throw());
        after_host_wait(app.cb);
        read_back(app.cb, out, out_at, readback, bytes);
        app.submit_and_wait();
      }
      const auto* floats = static_cast<const float*>(readback.mapped);
      CHECK(std::vector<float>(floats, floats + bytes / 4) == want.outputs);  // same kernels: bit for bit
      CHECK_THROWS_AS(other.result(ticket).value_or_throw(), Error);  // another layer's ticket
      const StepResult got = layer.result(ticket).value_or_throw();
      CHECK(got.emitted_positions == want.emitted_positions);
      CHECK(got.outputs == want.outputs);
    }
    // Refused before anything changed: a wait without a semaphore, and a
    // timeline value on a context without timeline semaphores.
    SubmitOptions bad;
    bad.waits.push_back({VK_NULL_HANDLE, 0, VK_PIPELINE_STAGE_ALL_COMMANDS_BIT});
    CHECK(code_of([&] { layer.submit({}, {}, bad).value_or_throw(); }) == ErrorCode::invalid_argument);
    if (!chains) {
      VkSemaphoreCreateInfo binary_info{VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO};
      VkSemaphore binary = VK_NULL_HANDLE;
      test::ok(vkCreateSemaphore(app.device, &binary_info, nullptr, &binary), "vkCreateSemaphore");
      bad.waits = {{binary, 5, VK_PIPELINE_STAGE_ALL_COMMANDS_BIT}};
      CHECK(code_of([&] { layer.submit({}, {}, bad).value_or_throw(); }) == ErrorCode::unsupported);
      vkDestroySemaphore(app.device, binary, nullptr);
    }
    CHECK(layer.step({}).value_or_throw().emitted_positions == blocking.step({}).value_or_throw().emitted_positions);
    layer.wait().or_throw();
    CHECK(layer.snapshot().value_or_throw().positions == blocking.snapshot().value_or_throw().positions);

    // A stack's submitted steps write their final hidden rows, packed, into
    // the application's buffer as well, chained the same way.
    const StackConfig sc = test::small_stack(2, {4, 2, 6}, 6, 2, 14, 5, Policy::lru());
    RandomWeights weights(23);
    auto stack_owner = gpu::Stack::create(context, sc, weights).value_or_throw();
    gpu::Stack& stack = *stack_owner;
    const test::TokenStream tokens = test::random_tokens(18, sc.vocab, 29, 0.1);
    const VkDeviceSize hidden_bytes = uint64_t{sc.chunk} * sc.hidden * 4;
    AppBuffer hidden(app, hidden_bytes, false), hidden_back(app, hidden_bytes, true);
    StackRequest request;
    request.hidden = true;
    for (uint32_t first = 0; first < tokens.rows(); first += sc.chunk) {
      SubmitOptions submit;
      submit.outputs = BufferRange{hidden.buffer, 0, hidden_bytes};
      const Ticket ticket = stack.submit(tokens.chunk(first, sc.chunk), request, submit).value_or_throw();
      app.begin();
      if (chains) {
        read_back(app.cb, hidden, 0, hidden_back, hidden_bytes);
        app.submit(ticket.semaphore(), ticket.value());
        app.wait();
      } else {
        CHECK(ticket.wait().value_or_throw());
        after_host_wait(app.cb);
        read_back(app.cb, hidden, 0, hidden_back, hidden_bytes);
        app.submit_and_wait();
      }
      const StackOutput got = stack.result(ticket).value_or_throw();
      const auto* floats = static_cast<const float*>(hidden_back.mapped);
      CHECK(std::vector<float>(floats, floats + got.hidden.size()) == got.hidden);
    }
    stack.wait().or_throw();
  }
  app.check_no_messages();
}

TEST_CASE("embedding: stack steps submitted two at a time (tickets, double-buffered staging) equal the blocking stack") {
  Context& context = test::gpu();
  StackConfig c = test::small_stack(2, {4, 2, 6}, 6, 7, 14, 5, Policy::lra_sum());
  const test::TokenStream s = test::random_tokens(40, c.vocab, 17, 0.1);
  RandomWeights weights(19);
  auto blocking_owner = gpu::Stack::create(context, c, weights).value_or_throw();
  gpu::Stack& blocking = *blocking_owner;
  auto pipelined_owner = gpu::Stack::create(context, c, weights).value_or_throw();
  gpu::Stack& pipelined = *pipelined_owner;
  StackRequest request;
  request.hidden = true;
  request.logits = true;
  std::vector<StackChunk> chunks;
  for (uint32_t first = 0; first < s.rows(); first += c.chunk)
    chunks.push_back(s.chunk(first, std::min(c.chunk, s.rows() - first)));
  std::vector<StackOutput> want;
  for (const StackChunk& chunk : chunks) want.push_back(blocking.step(chunk, request).value_or_throw());
  // The host plans step t+1 while the device may still run step t.
  std::vector<Ticket> tickets;
  tickets.push_back(pipelined.submit(chunks[0], request).value_or_throw());
  for (size_t t = 0; t < chunks.size(); ++t) {
    INFO("step " << t);
    if (t + 1 < chunks.size()) tickets.push_back(pipelined.submit(chunks[t + 1], request).value_or_throw());
    CHECK(tickets[t].step() == t);
    CHECK(tickets[t].wait().value_or_throw());
    CHECK_THROWS_AS(blocking.result(tickets[t]).value_or_throw(), Error);  // another stack's ticket
    const StackOutput got = pipelined.result(tickets[t]).value_or_throw();
    CHECK(got.positions == want[t].positions);
    CHECK(got.hidden == want[t].hidden);  // same device, same kernels: bit for bit
    CHECK(got.logits == want[t].logits);
  }
  CHECK_THROWS_AS(pipelined.result(tickets.back()).value_or_throw(), Error);  // collected once
  CHECK(pipelined.snapshot(1).value_or_throw().positions == blocking.snapshot(1).value_or_throw().positions);
  const StackOutput drained = pipelined.finish(request).value_or_throw(), want_drained = blocking.finish(request).value_or_throw();
  CHECK(drained.positions == want_drained.positions);
  CHECK(drained.logits == want_drained.logits);
  test::check_no_validation_messages(context);
}

namespace {
int device_idles = 0;
VKAPI_ATTR VkResult VKAPI_CALL count_idle(VkDevice) {
  ++device_idles;
  return VK_SUCCESS;
}
}  // namespace

TEST_CASE("embedding: a context on an adopted device waits only on its own fences, never idles the device") {
  App app;
  const LayerConfig config = embedding_config(PolicyKind::fifo);
  const test::Stream stream = test::random_stream(config.shape, 20, 31);
  // Counts the library's calls of vkDeviceWaitIdle (its loaded entry point).
  struct Hook {
    PFN_vkDeviceWaitIdle saved = vk::vkDeviceWaitIdle;
    Hook() { vk::vkDeviceWaitIdle = count_idle; }
    ~Hook() { vk::vkDeviceWaitIdle = saved; }
  };
  device_idles = 0;
  {
    Hook hook;
    auto context_owner = Context::adopt(app.external()).value_or_throw();
    Context& context = *context_owner;
    auto layer_owner = gpu::Layer::create(context, config).value_or_throw();
    gpu::Layer& layer = *layer_owner;
    for (uint32_t at = 0; at < stream.rows; at += config.chunk) layer.submit(stream.chunk(at, config.chunk)).value_or_throw();
    // Destroyed with a step possibly in flight: the layer waits on its own fences.
  }
  CHECK(device_idles == 0);
  app.check_no_messages();
}

namespace {

// A few layer steps and stack steps on `context`: pipelines, descriptor
// pools, buffers, arenas, fences and staging, each created and destroyed
// (validation messages are the caller's: its own context's, or the app's).
void exercise(Context& context) {
  const LayerConfig config = embedding_config(PolicyKind::lra_sum);
  const test::Stream stream = test::random_stream(config.shape, 3 * config.chunk, 41);
  {
    auto layer_owner = gpu::Layer::create(context, config).value_or_throw();
    gpu::Layer& layer = *layer_owner;
    for (uint32_t at = 0; at < stream.rows; at += config.chunk)
      CHECK(layer.step(stream.chunk(at, config.chunk)).value_or_throw().outputs.size() <= size_t{config.chunk} * config.shape.q_row());
  }
  const StackConfig c = test::small_stack(2, {4, 2, 8}, 4, 5, 9, 4, Policy::lru());
  RandomWeights weights(7);
  auto stack_owner = gpu::Stack::create(context, c, weights).value_or_throw();
  gpu::Stack& stack = *stack_owner;
  const test::TokenStream tokens = test::random_tokens(2 * c.chunk, c.vocab, 3);
  CHECK(!test::run_stack(stack, tokens).empty());
}

}  // namespace

TEST_CASE("embedding: the application's allocation callbacks serve the context it creates, all freed") {
  test::CountingAllocator allocator;
  {
    ContextOptions options;
    options.allocator = allocator.callbacks();
    auto context_owner = Context::create(options).value_or_throw();
    Context& context = *context_owner;
    CHECK(context.allocator() == allocator.callbacks());
    exercise(context);
    test::check_no_validation_messages(context);
  }
  // The driver allocates through the instance's and device's callbacks; any
  // create and destroy that disagreed on them would leave some live.
  CHECK(allocator.calls() > 0);
  CHECK(allocator.live() == 0);
  CHECK(allocator.foreign() == 0);
}

TEST_CASE("embedding: an adopted device's context uses the application's callbacks and options, reads no environment") {
  // The application's own objects use the driver's allocator, so every call
  // counted here is one of attendre's objects (command pool, buffers,
  // memory, pipelines, descriptor pools, fences) given the callbacks, and
  // none left live means each was destroyed with them too.
  App app;
  test::CountingAllocator allocator;
  // Values the environment readers would reject: read, they would throw.
  test::ScopedEnv kernels("ATTENDRE_KERNELS", "bogus");
  test::ScopedEnv disable("ATTENDRE_DISABLE", "bogus");
  {
    ExternalDevice external = app.external();
    external.allocator = allocator.callbacks();
    external.kernels = DeviceCaps::KernelStyle::tiled;
    external.disabled_features = FeatureSet{}.add(Feature::subgroup_shuffle);
    auto context_owner = Context::adopt(external).value_or_throw();
    Context& context = *context_owner;
    CHECK(context.caps().kernel_style == DeviceCaps::KernelStyle::tiled);
    CHECK(context.caps().disabled == FeatureSet{}.add(Feature::subgroup_shuffle));
    CHECK_FALSE(context.caps().subgroup_shuffle);
    exercise(context);
    CHECK(allocator.calls() > 0);
    CHECK(allocator.live() > 0);  // the command pool at least, while the context lives
  }
  CHECK(allocator.live() == 0);
  CHECK(allocator.foreign() == 0);
  app.check_no_messages();
  // Without the options, the same environment is read (and rejected).
  CHECK_THROWS_AS(Context::adopt(app.external()).value_or_throw(), Error);
}
