// The C API called in this process: what its C program cannot check
// without a Vulkan device of its own (a record needs the application's
// device, buffers and command buffer; a chained ticket, its submissions):
// options, recorded layer, K/V memory and stack steps, and tickets, against
// the reference or the blocking C calls.
#include "app_device.hpp"

#include <attendre/attendre.h>
#include "capi/capi.hpp"
#include <attendre/reference/layer.hpp>

#include <array>
#include <cstring>

namespace {

using namespace attendre;

#define C_OK(call) REQUIRE_MESSAGE((call) == ATTENDRE_OK, #call << ": " << attendre_last_error())

// The embedding tests' layer (GQA, rows off every power of two, N not a
// multiple of S), in its C form and its C++ one.
attendre_layer_config c_layer_config(bool fp16_memory = false) {
  attendre_layer_config c;
  attendre_layer_config_defaults(&c);
  c.memory.fp16_memory = fp16_memory ? 1 : 0;
  c.heads_q = 4;
  c.heads_kv = 2;
  c.head_dim = 20;
  c.chunk = 5;
  c.memory.q_capacity = 7;
  c.memory.kv_capacity = 11;
  c.memory.top_k = 4;
  c.memory.policy = "lra_sum";
  return c;
}

LayerConfig cpp_layer_config() {
  LayerConfig c;
  c.shape = {4, 2, 20};
  c.chunk = 5;
  c.q_capacity = 7;
  c.kv.capacity = 11;
  c.kv.policy = Policy{PolicyKind::lra_sum, 0.0, {}};
  c.retrieval.top_k = 4;
  c.retrieval.causal = true;  // the C memory setting's default
  return c;
}

attendre_chunk c_chunk(const ChunkView& v) {
  return {v.rows,
          v.q.empty() ? nullptr : v.q.data(),
          v.k.empty() ? nullptr : v.k.data(),
          v.v.empty() ? nullptr : v.v.data(),
          v.positions.data(),
          v.valid.empty() ? nullptr : v.valid.data(),
          v.tags.empty() ? nullptr : v.tags.data()};
}

// Every step of `stream` (then drain steps until nothing waits) through a C layer on `context`.
std::vector<test::StepRecord> c_layer_run(attendre_context* context, const test::Stream& stream,
                                          bool fp16_memory = false) {
  const attendre_layer_config config = c_layer_config(fp16_memory);
  attendre_layer* layer = nullptr;
  C_OK(attendre_layer_create(context, &config, &layer));
  std::vector<test::StepRecord> run;
  int pending = 1;
  for (uint32_t at = 0; at < stream.rows || pending; at += config.chunk) {
    if (at < stream.rows) {
      const attendre_chunk chunk = c_chunk(stream.chunk(at, std::min(config.chunk, stream.rows - at)));
      C_OK(attendre_layer_step(layer, &chunk));
    } else {
      C_OK(attendre_layer_drain_step(layer));
    }
    size_t positions = 0, outputs = 0;
    attendre_layer_output(layer, nullptr, &positions, nullptr, &outputs);  // asks the sizes
    run.push_back({});
    run.back().emitted.resize(positions);
    run.back().outputs.resize(outputs);
    C_OK(attendre_layer_output(layer, run.back().emitted.data(), &positions, run.back().outputs.data(), &outputs));
    C_OK(attendre_layer_has_pending(layer, &pending));
  }
  attendre_layer_destroy(layer);
  return run;
}

// The application's device for attendre_context_adopt (options NULL: the
// defaults), with the features the application enabled.
attendre_external_device c_external(const test::App& app, const attendre_context_options* options) {
  attendre_external_device external{};
  external.instance = app.instance;
  external.physical_device = app.physical;
  external.device = app.device;
  external.queue = app.queue;
  external.queue_family = app.family;
  external.storage_16bit_enabled = app.storage_16bit ? 1 : 0;
  external.timeline_semaphore_enabled = app.timeline ? 1 : 0;
  external.storage_8bit_enabled = app.storage_8bit ? 1 : 0;
  external.float16_enabled = app.float16 ? 1 : 0;
  external.options = options;
  return external;
}

attendre_context* c_adopt(const test::App& app, const attendre_context_options* options = nullptr) {
  const attendre_external_device external = c_external(app, options);
  attendre_context* context = nullptr;
  C_OK(attendre_context_adopt(&external, &context));
  return context;
}

void check_no_validation_messages(attendre_context* context) {
  size_t messages = 0;
  C_OK(attendre_context_take_validation_messages(context, &messages, nullptr, nullptr));
  CHECK_MESSAGE(messages == 0, messages << " validation messages");
}

}  // namespace

TEST_CASE("C API: fp16_memory stores a layer's memories in fp16, as the rounding reference does") {
  const test::Stream stream = test::random_stream({4, 2, 20}, 31, 6);
  LayerConfig config = cpp_layer_config();
  config.kv.storage = MemoryStorage::f16;
  reference::Layer cpu(config);
  std::vector<test::StepRecord> expected = test::run_stream(cpu, stream);
  for (test::StepRecord& step : expected) step.snapshot = {};  // the C run reads outputs only
  attendre_context* context = nullptr;
  C_OK(attendre_context_create(nullptr, &context));
  test::check_runs_match(expected, c_layer_run(context, stream, true), 2e-4, 2e-4, "fp16 memory");
  check_no_validation_messages(context);
  attendre_context_destroy(context);
}

TEST_CASE("C API: a context with disabled features reports them and steps a layer as the default context does") {
  const test::Stream stream = test::random_stream({4, 2, 20}, 31, 5);
  attendre_context* plain = nullptr;
  C_OK(attendre_context_create(nullptr, &plain));
  const std::vector<test::StepRecord> expected = c_layer_run(plain, stream);
  check_no_validation_messages(plain);
  attendre_context_destroy(plain);

  attendre_context_options options;
  attendre_context_options_defaults(&options);
  options.disabled_features = ATTENDRE_FEATURE_SUBGROUP_SHUFFLE | ATTENDRE_FEATURE_STORAGE_16BIT;
  attendre_context* context = nullptr;
  C_OK(attendre_context_create(&options, &context));
  uint32_t disabled = 0;
  C_OK(attendre_context_disabled_features(context, &disabled));
  CHECK(disabled == options.disabled_features);
  test::check_runs_match(expected, c_layer_run(context, stream), 0.0, 2e-5, "features disabled");
  check_no_validation_messages(context);
  attendre_context_destroy(context);

  options.disabled_features = 1u << 31;
  context = nullptr;
  CHECK(attendre_context_create(&options, &context) == ATTENDRE_ERROR_INVALID_ARGUMENT);
  CHECK(context == nullptr);
  CHECK(std::string(attendre_last_error()).find("disabled_features has unknown bits") != std::string::npos);
}

TEST_CASE("C API: fp16_activations reach the stack, max_groups_per_dispatch the context (API version 3)") {
  CHECK(attendre_version() >= 3);
  attendre_context* context = nullptr;
  C_OK(attendre_context_create(nullptr, &context));
  // One chunk of tokens through a random-weight stack, fp32 and fp16 activations.
  auto logits = [&](attendre_context* on, int fp16_activations) {
    attendre_stack_config config;
    attendre_stack_config_defaults(&config);
    config.seed = 9;
    config.memory.fp16_activations = fp16_activations;
    config.memory.q_capacity = 0;  // outputs leave in the step that reads them
    attendre_stack* stack = nullptr;
    C_OK(attendre_stack_create(on, &config, &stack));
    const uint32_t rows = config.memory.chunk;
    std::vector<uint32_t> tokens(rows);
    std::vector<int64_t> positions(rows);
    for (uint32_t r = 0; r < rows; ++r) tokens[r] = (r * 7 + 3) % config.vocab, positions[r] = r;
    attendre_stack_chunk chunk{};
    chunk.rows = rows;
    chunk.tokens = tokens.data();
    chunk.positions = positions.data();
    C_OK(attendre_stack_step(stack, &chunk, ATTENDRE_WANT_LOGITS));
    size_t count = 0;  // asked with no room: the size needed
    REQUIRE(attendre_stack_output_logits(stack, nullptr, &count) == ATTENDRE_ERROR_BUFFER_TOO_SMALL);
    std::vector<float> out(count);
    C_OK(attendre_stack_output_logits(stack, out.data(), &count));
    attendre_stack_destroy(stack);
    return out;
  };
  const std::vector<float> f32 = logits(context, 0), f16 = logits(context, 1);
  REQUIRE(f32.size() == f16.size());
  REQUIRE_FALSE(f32.empty());
  double largest = 0.0, scale = 0.0;
  for (size_t i = 0; i < f32.size(); ++i) {
    largest = std::max(largest, double(std::abs(f32[i] - f16[i])));
    scale = std::max(scale, double(std::abs(f32[i])));
  }
  CHECK(largest > 0.0);            // the setting reached the stack
  CHECK(largest < 5e-3 * scale);   // and costs fp16 rounding only

  // A dispatch limit is an explicit choice of limits: refused with the
  // environment's (-1), applied with portable_limits 0, and cutting grids
  // into pieces changes no result.
  attendre_context_options options;
  attendre_context_options_defaults(&options);
  options.max_groups_per_dispatch = 3;
  attendre_context* limited = nullptr;
  CHECK(attendre_context_create(&options, &limited) == ATTENDRE_ERROR_INVALID_ARGUMENT);
  CHECK(limited == nullptr);
  CHECK(std::string(attendre_last_error()).find("max_groups_per_dispatch needs portable_limits 0 or 1") != std::string::npos);
  options.portable_limits = 0;
  C_OK(attendre_context_create(&options, &limited));
  CHECK(limited->context.caps().max_groups_per_dispatch == 3);
  CHECK(logits(limited, 1) == f16);
  check_no_validation_messages(limited);
  attendre_context_destroy(limited);
  check_no_validation_messages(context);
  attendre_context_destroy(context);
}

TEST_CASE("C API: half_loads, byte_loads and half_math take 16-bit loads, int8 loads and fp16 products over the "
          "driver quirks, on created and adopted devices (API versions 4 and 5)") {
  CHECK(attendre_version() >= 5);
  // Each -1/0/1 field, the quirk it clears and the feature it uses.
  struct Preference {
    int attendre_context_options::*field;
    bool DriverQuirks::*quirk;
    bool DeviceCaps::*storage;
    const char* name;
  };
  const Preference preferences[] = {
      {&attendre_context_options::half_loads, &DriverQuirks::half_loads_lane_by_lane, &DeviceCaps::storage_16bit,
       "half_loads"},
      {&attendre_context_options::byte_loads, &DriverQuirks::byte_loads_lane_by_lane, &DeviceCaps::storage_8bit,
       "byte_loads"},
      {&attendre_context_options::half_math, &DriverQuirks::half_math_emulated, &DeviceCaps::float16, "half_math"}};
  test::App app;
  for (const Preference& p : preferences) {
    INFO(p.name);
    attendre_context_options options;
    attendre_context_options_defaults(&options);
    CHECK(options.*p.field == -1);
    options.*p.field = 0;
    attendre_context* quirked = nullptr;
    C_OK(attendre_context_create(&options, &quirked));
    const DeviceCaps& caps = quirked->context.caps();
    const bool lavapipe = caps.type == VK_PHYSICAL_DEVICE_TYPE_CPU && caps.name.rfind("llvmpipe", 0) == 0;
    CHECK(caps.quirks.*p.quirk == lavapipe);
    options.*p.field = 1;
    attendre_context* loads = nullptr;
    C_OK(attendre_context_create(&options, &loads));
    const DeviceCaps& preferred = loads->context.caps();
    CHECK_FALSE(preferred.quirks.*p.quirk);
    CHECK(preferred.*p.storage == caps.*p.storage);
    // Each field clears its own quirk only.
    CHECK(preferred.quirks.half_loads_lane_by_lane + preferred.quirks.byte_loads_lane_by_lane +
              preferred.quirks.half_math_emulated ==
          (lavapipe ? 2 : 0));
    check_no_validation_messages(quirked);
    check_no_validation_messages(loads);
    attendre_context_destroy(quirked);
    attendre_context_destroy(loads);

    for (const int bad : {2, -2}) {
      options.*p.field = bad;
      attendre_context* refused = nullptr;
      CHECK(attendre_context_create(&options, &refused) == ATTENDRE_ERROR_INVALID_ARGUMENT);
      CHECK(refused == nullptr);
      CHECK(std::string(attendre_last_error()) ==
            "attendre_context_create: " + std::string(p.name) + " " + std::to_string(bad) + " is not -1, 0 or 1");
    }
    const attendre_external_device external = c_external(app, &options);
    attendre_context* refused = nullptr;
    CHECK(attendre_context_adopt(&external, &refused) == ATTENDRE_ERROR_INVALID_ARGUMENT);
    CHECK(refused == nullptr);
    CHECK(std::string(attendre_last_error()) == "attendre_context_adopt: " + std::string(p.name) + " -2 is not -1, 0 or 1");

    // An adopted device takes the same choice (8-bit storage and
    // shaderFloat16, which the application did not enable for attendre,
    // count as absent there).
    for (const int value : {0, 1}) {
      options.*p.field = value;
      attendre_context* adopted = c_adopt(app, &options);
      CHECK(adopted->context.caps().quirks.*p.quirk == (lavapipe && value == 0));
      CHECK_FALSE(adopted->context.caps().storage_8bit);
      CHECK_FALSE(adopted->context.caps().float16);
      attendre_context_destroy(adopted);
    }
  }

  // An application that enabled them gives them: storage_8bit_enabled and
  // float16_enabled (API version 5), like storage_16bit_enabled.
  test::App narrow(true);
  attendre_context_options none_off;
  attendre_context_options_defaults(&none_off);
  none_off.disabled_features = 0;  // whatever ATTENDRE_DISABLE says
  attendre_context* adopted = c_adopt(narrow, &none_off);
  const DeviceCaps& caps = adopted->context.caps();
  CHECK(caps.storage_16bit == narrow.storage_16bit);
  CHECK(caps.storage_8bit == narrow.storage_8bit);
  CHECK(caps.float16 == narrow.float16);
  if (caps.type == VK_PHYSICAL_DEVICE_TYPE_CPU && caps.name.rfind("llvmpipe", 0) == 0)
    CHECK((narrow.storage_16bit && narrow.storage_8bit && narrow.float16));  // lavapipe has all three
  c_layer_run(adopted, test::random_stream({4, 2, 20}, 12, 6));
  attendre_context_destroy(adopted);
  narrow.check_no_messages();
}

TEST_CASE("C API: the application's allocator in the options is called and fully freed") {
  test::CountingAllocator allocator;
  {
    attendre_context_options options;
    attendre_context_options_defaults(&options);
    options.allocator = allocator.callbacks();
    attendre_context* context = nullptr;
    C_OK(attendre_context_create(&options, &context));
    c_layer_run(context, test::random_stream({4, 2, 20}, 12, 6));
    check_no_validation_messages(context);
    attendre_context_destroy(context);
  }
  CHECK(allocator.calls() > 0);
  CHECK(allocator.live() == 0);
  CHECK(allocator.foreign() == 0);
}

TEST_CASE("C API: layer steps recorded into the application's command buffer and buffers match the reference") {
  using namespace attendre::vk;  // the application calls the loaded entry points, as the library does
  const LayerConfig config = cpp_layer_config();
  test::StreamOptions stream_options;
  stream_options.invalid_fraction = 0.2;
  const test::Stream stream = test::random_stream(config.shape, 37, 9, stream_options);
  const uint32_t S = config.chunk, q_row = config.shape.q_row(), kv_row = config.shape.kv_row();

  test::App app;
  test::CountingAllocator allocator;
  std::vector<test::StepRecord> expected, actual;
  {
    // Adopted with options: the allocator and a disabled feature apply to the application's device.
    attendre_context_options options;
    attendre_context_options_defaults(&options);
    options.allocator = allocator.callbacks();
    options.disabled_features = ATTENDRE_FEATURE_SUBGROUP_SHUFFLE;
    attendre_context* context = c_adopt(app, &options);
    uint32_t disabled = 0;
    C_OK(attendre_context_disabled_features(context, &disabled));
    CHECK(disabled == ATTENDRE_FEATURE_SUBGROUP_SHUFFLE);
    const attendre_layer_config c_config = c_layer_config();
    attendre_layer* layer = nullptr;
    C_OK(attendre_layer_create(context, &c_config, &layer));
    reference::Layer cpu(config);

    const VkDeviceSize q_at = 16, k_at = 4, v_at = 260, out_at = 12;  // off the buffers' beginnings
    const VkDeviceSize q_bytes = uint64_t{S} * q_row * 4, kv_bytes = uint64_t{S} * kv_row * 4;
    test::AppBuffer staging(app, q_bytes + 2 * kv_bytes, true), readback(app, q_bytes, true);
    test::AppBuffer q(app, q_at + q_bytes, false), k(app, k_at + kv_bytes, false), v(app, v_at + kv_bytes, false),
        out(app, out_at + q_bytes, false);
    const auto handle = [](VkBuffer b) { return static_cast<uint64_t>(reinterpret_cast<uintptr_t>(b)); };

    uint32_t at = 0;
    for (uint32_t step = 0; at < stream.rows || cpu.has_pending_queries(); ++step) {
      const uint32_t rows = std::min(S, stream.rows - at);
      const ChunkView chunk = stream.chunk(at, rows);
      at += rows;
      const StepResult want = cpu.step(chunk).value_or_throw();
      expected.push_back({want.emitted_positions, want.outputs, {}});

      app.begin();
      attendre_chunk c = c_chunk(chunk);
      std::array<attendre_buffer_range, 3> qkv{};
      const bool from_buffers = step % 2 == 0;  // odd steps hand q, k, v over from the host
      if (from_buffers) {
        auto* bytes = static_cast<char*>(staging.mapped);
        std::memcpy(bytes, chunk.q.data(), chunk.q.size_bytes());
        std::memcpy(bytes + q_bytes, chunk.k.data(), chunk.k.size_bytes());
        std::memcpy(bytes + q_bytes + kv_bytes, chunk.v.data(), chunk.v.size_bytes());
        copy(app.cb, staging, 0, q, q_at, chunk.q.size_bytes());
        copy(app.cb, staging, q_bytes, k, k_at, chunk.k.size_bytes());
        copy(app.cb, staging, q_bytes + kv_bytes, v, v_at, chunk.v.size_bytes());
        c.q = c.k = c.v = nullptr;
        qkv = {{{handle(q.buffer), q_at, chunk.q.size_bytes()},
                {handle(k.buffer), k_at, chunk.k.size_bytes()},
                {handle(v.buffer), v_at, chunk.v.size_bytes()}}};
      }
      const attendre_buffer_range outputs{handle(out.buffer), out_at, q_bytes};
      std::vector<int64_t> emitted(S);
      size_t count = emitted.size();
      C_OK(attendre_layer_record(layer, app.cb, &c, from_buffers ? qkv.data() : nullptr, &outputs,
                                 VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_READ_BIT, emitted.data(), &count));
      emitted.resize(count);
      const VkDeviceSize emitted_bytes = count * q_row * 4;
      read_back(app.cb, out, out_at, readback, emitted_bytes);
      app.submit_and_wait();
      const auto* floats = static_cast<const float*>(readback.mapped);
      actual.push_back({emitted, std::vector<float>(floats, floats + emitted_bytes / 4), {}});
    }
    // Too little room for the positions is refused before anything is recorded.
    size_t small = S - 1;
    std::vector<int64_t> room(S);
    attendre_chunk empty{};
    CHECK(attendre_layer_record(layer, app.cb, &empty, nullptr, nullptr, 0, 0, room.data(), &small) ==
          ATTENDRE_ERROR_BUFFER_TOO_SMALL);
    CHECK(small == S);
    int pending = 1;
    C_OK(attendre_layer_has_pending(layer, &pending));
    CHECK(pending == 0);
    attendre_layer_destroy(layer);
    attendre_context_destroy(context);
  }
  test::check_runs_match(expected, actual, 2e-4, 2e-4, "C recorded");
  CHECK(allocator.calls() > 0);
  CHECK(allocator.live() == 0);
  app.check_no_messages();
}

namespace {

uint64_t c_handle(VkBuffer b) { return static_cast<uint64_t>(reinterpret_cast<uintptr_t>(b)); }

std::vector<float> c_layer_outputs(const attendre_layer* layer, std::vector<int64_t>& positions) {
  size_t count = 0, outputs = 0;
  attendre_layer_output(layer, nullptr, &count, nullptr, &outputs);  // asks the sizes
  positions.resize(count);
  std::vector<float> out(outputs);
  C_OK(attendre_layer_output(layer, positions.data(), &count, out.data(), &outputs));
  return out;
}

}  // namespace

TEST_CASE("C API: tickets chain on the application's device, and K/V memory and stack steps record into its buffers") {
  using namespace attendre::vk;
  const LayerConfig config = cpp_layer_config();
  const test::Stream stream = test::random_stream(config.shape, 20, 13);
  const uint32_t S = config.chunk, q_row = config.shape.q_row(), kv_row = config.shape.kv_row();
  test::App app;
  {
    attendre_context* context = c_adopt(app);
    int timeline = -1;
    C_OK(attendre_context_timeline(context, &timeline));
    if (!app.timeline) CHECK(timeline == 0);
    const attendre_layer_config c_config = c_layer_config();
    const VkDeviceSize q_bytes = uint64_t{S} * q_row * 4, kv_bytes = uint64_t{S} * kv_row * 4;
    test::AppBuffer out(app, q_bytes, false), readback(app, q_bytes, true), k(app, kv_bytes, false),
        v(app, kv_bytes, false), q(app, q_bytes, false);

    // A layer's steps submitted with their outputs in the application's
    // buffer, which its own submission copies once the ticket is done.
    attendre_layer *layer = nullptr, *blocking = nullptr;
    C_OK(attendre_layer_create(context, &c_config, &layer));
    C_OK(attendre_layer_create(context, &c_config, &blocking));
    for (uint32_t at = 0; at < stream.rows; at += S) {
      const attendre_chunk chunk = c_chunk(stream.chunk(at, S));
      C_OK(attendre_layer_step(blocking, &chunk));
      std::vector<int64_t> want_positions, got_positions;
      const std::vector<float> want = c_layer_outputs(blocking, want_positions);
      const attendre_buffer_range outputs{c_handle(out.buffer), 0, q_bytes};
      attendre_submit_options options{nullptr, 0, &outputs};
      attendre_ticket* ticket = nullptr;
      C_OK(attendre_layer_submit(layer, &chunk, &options, &ticket));
      uint64_t semaphore = 0, value = 0;
      app.begin();
      if (timeline) {
        C_OK(attendre_ticket_semaphore(ticket, &semaphore, &value));
        test::read_back(app.cb, out, 0, readback, want.size() * 4);
        app.submit(reinterpret_cast<VkSemaphore>(static_cast<uintptr_t>(semaphore)), value);  // a device wait, not the host's
        app.wait();
      } else {
        CHECK(attendre_ticket_semaphore(ticket, &semaphore, &value) == ATTENDRE_ERROR_UNSUPPORTED);
        int finished = 0;
        C_OK(attendre_ticket_wait(ticket, UINT64_MAX, &finished));
        CHECK(finished == 1);
        VkMemoryBarrier barrier{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
        barrier.srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT;
        barrier.dstAccessMask = VK_ACCESS_TRANSFER_READ_BIT;
        vkCmdPipelineBarrier(app.cb, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_TRANSFER_BIT, 0, 1, &barrier, 0,
                             nullptr, 0, nullptr);
        test::read_back(app.cb, out, 0, readback, want.size() * 4);
        app.submit_and_wait();
      }
      const auto* floats = static_cast<const float*>(readback.mapped);
      CHECK(std::vector<float>(floats, floats + want.size()) == want);
      C_OK(attendre_layer_result(layer, ticket));
      attendre_ticket_destroy(ticket);
      CHECK(c_layer_outputs(layer, got_positions) == want);
      CHECK(got_positions == want_positions);
    }
    attendre_layer_destroy(layer);
    attendre_layer_destroy(blocking);

    // The K/V memory: keys, values and queries from the application's buffers.
    attendre_kv_memory *memory = nullptr, *blocking_memory = nullptr;
    C_OK(attendre_kv_memory_create(context, &c_config, S, &memory));
    C_OK(attendre_kv_memory_create(context, &c_config, S, &blocking_memory));
    for (uint32_t at = 0; at < stream.rows; at += S) {
      const ChunkView rows = stream.chunk(at, S);
      const attendre_chunk chunk = c_chunk(rows);
      C_OK(attendre_kv_memory_insert(blocking_memory, &chunk));
      std::vector<float> want(uint64_t{S} * q_row);
      size_t count = want.size();
      C_OK(attendre_kv_memory_retrieve(blocking_memory, &chunk, want.data(), &count));
      app.begin();
      vkCmdUpdateBuffer(app.cb, k.buffer, 0, rows.k.size_bytes(), rows.k.data());
      vkCmdUpdateBuffer(app.cb, v.buffer, 0, rows.v.size_bytes(), rows.v.data());
      vkCmdUpdateBuffer(app.cb, q.buffer, 0, rows.q.size_bytes(), rows.q.data());
      attendre_chunk positions_only = chunk;
      positions_only.q = positions_only.k = positions_only.v = nullptr;
      const attendre_buffer_range kv[2] = {{c_handle(k.buffer), 0, kv_bytes}, {c_handle(v.buffer), 0, kv_bytes}};
      const attendre_buffer_range q_range{c_handle(q.buffer), 0, q_bytes}, outputs{c_handle(out.buffer), 0, q_bytes};
      C_OK(attendre_kv_memory_record_insert(memory, app.cb, &positions_only, kv, 0, 0));
      C_OK(attendre_kv_memory_record_retrieve(memory, app.cb, &positions_only, &q_range, &outputs,
                                              VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_READ_BIT));
      test::read_back(app.cb, out, 0, readback, count * 4);
      app.submit_and_wait();
      const auto* floats = static_cast<const float*>(readback.mapped);
      CHECK(std::vector<float>(floats, floats + count) == std::vector<float>(want.begin(), want.begin() + count));
    }
    attendre_kv_memory_destroy(memory);
    attendre_kv_memory_destroy(blocking_memory);

    // A stack: token ids from the application's buffer, logits into
    // another; drained by recorded steps of no rows, then a recorded decode.
    attendre_stack_config stack_config;
    attendre_stack_config_defaults(&stack_config);
    stack_config.seed = 5;
    attendre_stack *stack = nullptr, *blocking_stack = nullptr;
    C_OK(attendre_stack_create(context, &stack_config, &stack));
    C_OK(attendre_stack_create(context, &stack_config, &blocking_stack));
    const uint32_t SS = stack_config.memory.chunk, V = stack_config.vocab;
    test::AppBuffer ids(app, SS * 4, false), logits(app, uint64_t{SS} * V * 4, false),
        logits_back(app, uint64_t{SS} * V * 4, true);
    std::vector<uint32_t> tokens(3 * SS + 1);
    std::vector<int64_t> positions(tokens.size());
    for (size_t i = 0; i < tokens.size(); ++i) {
      tokens[i] = static_cast<uint32_t>(i * 29 % V);
      positions[i] = static_cast<int64_t>(i);
    }
    // One recorded call against the same call on the blocking stack.
    auto check_recorded = [&](int kind, uint32_t first, uint32_t rows, const char* when) {
      INFO(when);
      attendre_stack_chunk chunk{rows, tokens.data() + first, nullptr, positions.data() + first, nullptr};
      if (kind == ATTENDRE_RECORD_DECODE) C_OK(attendre_stack_decode(blocking_stack, &chunk, ATTENDRE_WANT_LOGITS));
      else if (rows > 0) C_OK(attendre_stack_step(blocking_stack, &chunk, ATTENDRE_WANT_LOGITS));
      app.begin();
      if (rows > 0) vkCmdUpdateBuffer(app.cb, ids.buffer, 0, rows * 4, tokens.data() + first);
      const attendre_buffer_range input{c_handle(ids.buffer), 0, uint64_t{rows} * 4},
          logits_range{c_handle(logits.buffer), 0, uint64_t{SS} * V * 4};
      chunk.tokens = nullptr;
      C_OK(attendre_stack_record(stack, app.cb, kind, 0, &chunk, rows > 0 ? &input : nullptr, nullptr, &logits_range,
                                 VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_READ_BIT));
      std::vector<int64_t> got(SS);
      size_t count = got.size();
      C_OK(attendre_stack_output_positions(stack, got.data(), &count));
      got.resize(count);
      test::read_back(app.cb, logits, 0, logits_back, count * V * 4);
      app.submit_and_wait();
      const auto* floats = static_cast<const float*>(logits_back.mapped);
      return std::make_pair(got, std::vector<float>(floats, floats + count * V));
    };
    auto blocking_output = [&] {
      std::vector<int64_t> p(64);
      std::vector<float> l(64 * V);
      size_t pc = p.size(), lc = l.size();
      C_OK(attendre_stack_output_positions(blocking_stack, p.data(), &pc));
      C_OK(attendre_stack_output_logits(blocking_stack, l.data(), &lc));
      p.resize(pc);
      l.resize(lc);
      return std::make_pair(p, l);
    };
    for (uint32_t first = 0; first < 3 * SS; first += SS) {
      const auto got = check_recorded(ATTENDRE_RECORD_STEP, first, SS, "step");  // then the blocking step's
      CHECK(got == blocking_output());  // same device, same kernels: bit for bit
    }
    std::vector<int64_t> drained_positions;
    std::vector<float> drained_logits;
    int pending = 1;
    while (pending) {
      const auto part = check_recorded(ATTENDRE_RECORD_STEP, 0, 0, "drain");
      drained_positions.insert(drained_positions.end(), part.first.begin(), part.first.end());
      drained_logits.insert(drained_logits.end(), part.second.begin(), part.second.end());
      C_OK(attendre_stack_has_pending(stack, &pending));
    }
    C_OK(attendre_stack_finish(blocking_stack, 0, ATTENDRE_WANT_LOGITS));
    CHECK(std::make_pair(drained_positions, drained_logits) == blocking_output());
    C_OK(attendre_stack_finish(stack, 0, 0));  // nothing left to run
    const auto decoded = check_recorded(ATTENDRE_RECORD_DECODE, 3 * SS, 1, "decode");
    CHECK(decoded.first.size() == 1);
    CHECK(decoded == blocking_output());
    CHECK(attendre_stack_record(stack, app.cb, 7, 0, nullptr, nullptr, nullptr, nullptr, 0, 0) ==
          ATTENDRE_ERROR_INVALID_ARGUMENT);
    attendre_stack_destroy(stack);
    attendre_stack_destroy(blocking_stack);
    check_no_validation_messages(context);
    attendre_context_destroy(context);
  }
  app.check_no_messages();
}
