// The C API's checks of what a caller gives it, called in this process:
// sizes whose products pass 32 bits, a model's full-context setting (every
// other field still checked and honoured), NULL outputs, non-finite logits
// and out-of-range positions of a generation. Each comes back as a status
// with a one-line message naming the problem; nothing crashes.
#include "model_fixtures.hpp"
#include "support.hpp"

#include <attendre/attendre.h>
#include <attendre/reference/layer.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

namespace {

using namespace attendre;

#define C_OK(call) REQUIRE_MESSAGE((call) == ATTENDRE_OK, #call << ": " << attendre_last_error())

// `status` is `expected`, with a one-line message holding `phrase`.
void check_refused(attendre_status status, attendre_status expected, const std::string& phrase) {
  const std::string message = attendre_last_error();
  INFO(message);
  CHECK(attendre_status_name(status) == std::string(attendre_status_name(expected)));
  CHECK(message.find(phrase) != std::string::npos);
  CHECK(message.find('\n') == std::string::npos);
}

// A C context, destroyed with the test.
struct CContext {
  CContext() { C_OK(attendre_context_create(nullptr, &context)); }
  ~CContext() { attendre_context_destroy(context); }
  CContext(const CContext&) = delete;
  CContext& operator=(const CContext&) = delete;
  attendre_context* context = nullptr;
};

// A C stack of random weights (the defaults: a vocabulary, S = 8).
struct CStack {
  explicit CStack(attendre_context* context) {
    attendre_stack_config config;
    attendre_stack_config_defaults(&config);
    C_OK(attendre_stack_create(context, &config, &stack));
    C_OK(attendre_stack_info_get(stack, &info));
  }
  ~CStack() { attendre_stack_destroy(stack); }
  CStack(const CStack&) = delete;
  CStack& operator=(const CStack&) = delete;
  attendre_stack* stack = nullptr;
  attendre_stack_info info{};
};

}  // namespace

TEST_CASE("C API checks: a random stack whose heads_q * head_dim is 2^32 or just past is refused, not a crash") {
  CContext c;
  for (const uint32_t heads_q : {65536u, 65538u}) {  // 2^32, 2^32 + 2^17
    attendre_stack_config config;
    attendre_stack_config_defaults(&config);
    config.heads_q = heads_q;
    config.head_dim = 65536;
    attendre_stack* stack = reinterpret_cast<attendre_stack*>(&config);  // set to NULL on failure
    check_refused(attendre_stack_create(c.context, &config, &stack), ATTENDRE_ERROR_INVALID_ARGUMENT,
                  "heads_q * head_dim must fit 32 bits, got heads_q=" + std::to_string(heads_q) + " head_dim=65536");
    CHECK(stack == nullptr);
  }
  // A layer likewise.
  attendre_layer_config layer_config;
  attendre_layer_config_defaults(&layer_config);
  layer_config.heads_q = 65536;
  layer_config.head_dim = 65536;
  layer_config.memory.kv_capacity = 4;
  attendre_layer* layer = nullptr;
  check_refused(attendre_layer_create(c.context, &layer_config, &layer), ATTENDRE_ERROR_INVALID_ARGUMENT,
                "heads_q * head_dim must fit 32 bits");
  CHECK(layer == nullptr);
}

TEST_CASE("C API checks: kv_capacity 0 with a model is its full context, every other field checked and kept") {
  test::TempDir dir;
  const std::filesystem::path path = test::write_fixture(dir.path, test::FixtureShape{}, 11);
  attendre_model* model = nullptr;
  C_OK(attendre_model_open(path.string().c_str(), nullptr, &model));
  attendre_model_info model_info;
  C_OK(attendre_model_info_get(model, &model_info));
  CContext c;
  attendre_memory_setting setting;
  attendre_memory_setting_defaults(&setting);
  setting.chunk = 8;
  setting.kv_capacity = 0;
  auto refused = [&](attendre_status expected, const std::string& phrase) {
    attendre_stack* stack = nullptr;
    check_refused(attendre_stack_create_from_model(c.context, model, &setting, &stack), expected, phrase);
    CHECK(stack == nullptr);
    attendre_memory_setting_defaults(&setting);
    setting.chunk = 8;
  };
  setting.policy = "no_such_policy";
  refused(ATTENDRE_ERROR_INVALID_ARGUMENT, "unknown policy 'no_such_policy'");
  setting.policy = "lfa";
  setting.lambda = std::nan("");
  refused(ATTENDRE_ERROR_INVALID_ARGUMENT, "lfa lambda");
  setting.n_sink = 1000000000;
  refused(ATTENDRE_ERROR_INFEASIBLE_CONFIG, "n_sink=1000000000");

  // N = 4, lfa, 4 sinks: each block waits 4 positions, and M is the trained context.
  setting.q_capacity = 4;
  setting.policy = "lfa";
  setting.lambda = 0.5;
  setting.n_sink = 4;
  attendre_stack* stack = nullptr;
  C_OK(attendre_stack_create_from_model(c.context, model, &setting, &stack));
  attendre_stack_info info;
  C_OK(attendre_stack_info_get(stack, &info));
  CHECK(info.blocks == model_info.blocks);
  CHECK(info.drain_positions == uint64_t{4} * model_info.blocks);
  // The full context holds every position: after one of them, all of them stay.
  std::vector<uint32_t> tokens(model_info.context_length);
  std::vector<int64_t> positions(model_info.context_length);
  for (uint32_t p = 0; p < model_info.context_length; ++p) tokens[p] = p % model_info.vocab, positions[p] = p;
  for (uint32_t first = 0; first < model_info.context_length; first += info.chunk) {
    attendre_stack_chunk chunk{};
    chunk.rows = std::min(info.chunk, model_info.context_length - first);
    chunk.tokens = tokens.data() + first;
    chunk.positions = positions.data() + first;
    C_OK(attendre_stack_step(stack, &chunk, 0));
  }
  size_t held = 0;
  CHECK(attendre_stack_snapshot(stack, 0, nullptr, nullptr, &held) == ATTENDRE_ERROR_BUFFER_TOO_SMALL);
  CHECK(held == model_info.context_length);
  attendre_stack_destroy(stack);
  attendre_model_destroy(model);
}

TEST_CASE("C API checks: attendre_context_device_memory refuses NULL outputs as the other getters do") {
  CContext c;
  uint64_t bytes = 7, peak = 7;
  check_refused(attendre_context_device_memory(c.context, nullptr, nullptr), ATTENDRE_ERROR_INVALID_ARGUMENT,
                "attendre_context_device_memory: bytes is NULL");
  check_refused(attendre_context_device_memory(c.context, &bytes, nullptr), ATTENDRE_ERROR_INVALID_ARGUMENT,
                "attendre_context_device_memory: peak_bytes is NULL");
  CHECK(bytes == 7);  // outputs untouched on failure
  C_OK(attendre_context_device_memory(c.context, &bytes, &peak));
  CHECK(peak >= bytes);
}

TEST_CASE("C API checks: generation from non-finite logits is a numerical error, a negative position named") {
  CContext c;
  CStack s(c.context);
  const size_t vocab = s.info.vocab;
  attendre_generate_options options;
  attendre_generate_options_defaults(&options);
  options.max_tokens = 1;  // one sample, no decode: only the logits decide
  std::vector<uint32_t> tokens(options.max_tokens);
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  struct Row {
    std::vector<float> logits;
    std::string named;
  };
  std::vector<float> one_inf(vocab, 0.0f), one_nan(vocab, 0.0f);
  one_inf[5] = inf;
  one_nan[vocab - 1] = nan;
  const Row rows[] = {{std::vector<float>(vocab, nan), "token 0 has NaN"},
                      {one_inf, "token 5 has inf"},
                      {one_nan, "token " + std::to_string(vocab - 1) + " has NaN"}};
  for (const double temperature : {0.0, 0.8}) {
    options.temperature = temperature;
    for (const Row& row : rows) {
      size_t count = tokens.size();
      int stopped = 7;
      check_refused(attendre_generate_after(s.stack, row.logits.data(), vocab, 0, &options, tokens.data(), &count,
                                            &stopped),
                    ATTENDRE_ERROR_NUMERICAL, "non-finite value: " + row.named);
      CHECK(stopped == 7);  // outputs untouched on failure
    }
  }
  const std::vector<float> finite(vocab, 0.0f);
  size_t count = tokens.size();
  check_refused(attendre_generate_after(s.stack, finite.data(), vocab, -1, &options, tokens.data(), &count, nullptr),
                ATTENDRE_ERROR_INVALID_ARGUMENT, "next_position is -1");
  check_refused(attendre_generate_after(s.stack, finite.data(), vocab, int64_t{1} << 31, &options, tokens.data(),
                                        &count, nullptr),
                ATTENDRE_ERROR_INVALID_ARGUMENT, "next_position 2147483648 plus max_tokens 1 exceeds 2^31 positions");
  // Finite logits generate.
  C_OK(attendre_generate_after(s.stack, finite.data(), vocab, 0, &options, tokens.data(), &count, nullptr));
  CHECK(count == 1);
}

TEST_CASE("C API checks: a refused stack step leaves no results of the step before it") {
  CContext c;
  CStack s(c.context);
  const uint32_t rows = s.info.chunk;
  std::vector<uint32_t> tokens(rows + 1, 1);
  std::vector<int64_t> positions(rows + 1);
  for (uint32_t r = 0; r <= rows; ++r) positions[r] = r;
  attendre_stack_chunk chunk{};
  chunk.tokens = tokens.data();
  chunk.positions = positions.data();
  // Steps until positions leave the last block, so that there are results.
  size_t emitted = 0;
  for (uint32_t step = 0; emitted == 0; ++step) {
    REQUIRE(step < 64);
    for (uint32_t r = 0; r < rows; ++r) positions[r] = int64_t{step} * rows + r;
    chunk.rows = rows;
    C_OK(attendre_stack_step(s.stack, &chunk, ATTENDRE_WANT_HIDDEN));
    emitted = 0;  // asks the size: OK with none, BUFFER_TOO_SMALL with some
    (void)attendre_stack_output_positions(s.stack, nullptr, &emitted);
  }
  chunk.rows = rows + 1;  // one row more than S
  check_refused(attendre_stack_step(s.stack, &chunk, ATTENDRE_WANT_HIDDEN), ATTENDRE_ERROR_INVALID_ARGUMENT,
                std::to_string(rows + 1) + " rows");
  size_t after = 5;
  C_OK(attendre_stack_output_positions(s.stack, nullptr, &after));
  CHECK(after == 0);
  check_refused(attendre_stack_decode(s.stack, nullptr, 0), ATTENDRE_ERROR_INVALID_ARGUMENT, "one is NULL");
  C_OK(attendre_stack_output_hidden(s.stack, nullptr, &after));
  CHECK(after == 0);
}

TEST_CASE("C API checks: n_recent reaches the layer (the reference's retained sets), an infeasible W is refused") {
  CContext c;
  attendre_layer_config config;
  attendre_layer_config_defaults(&config);
  CHECK(config.memory.n_recent == 0);
  config.heads_q = 2, config.heads_kv = 1, config.head_dim = 8, config.chunk = 3;
  config.memory.q_capacity = 2;
  config.memory.kv_capacity = 9;
  config.memory.top_k = 3;
  config.memory.policy = "lra_last";
  config.memory.n_sink = 1;
  config.memory.n_recent = 6;
  attendre_layer* layer = nullptr;
  C_OK(attendre_layer_create(c.context, &config, &layer));
  LayerConfig expected;
  expected.shape = {2, 1, 8};
  expected.chunk = 3;
  expected.q_capacity = 2;
  expected.kv.capacity = 9;
  expected.kv.policy = Policy::lra_last();
  expected.kv.n_sink = 1;
  expected.kv.n_recent = 6;
  expected.retrieval.top_k = 3;
  expected.retrieval.causal = true;  // the C defaults
  reference::Layer cpu(expected);
  const test::Stream s = test::random_stream(expected.shape, 30, 5);
  for (uint32_t first = 0; first < s.rows; first += 3) {
    const ChunkView view = s.chunk(first, 3);
    attendre_chunk chunk{view.rows, view.q.data(), view.k.data(), view.v.data(), view.positions.data(), nullptr, nullptr};
    C_OK(attendre_layer_step(layer, &chunk));
    cpu.step(view).value_or_throw();
    std::vector<int64_t> held(9);
    size_t count = held.size();
    C_OK(attendre_layer_snapshot(layer, held.data(), nullptr, &count));
    held.resize(count);
    CHECK(held == cpu.snapshot().value_or_throw().positions);
    for (int64_t p = std::max<int64_t>(0, s.positions[first + 2] - 5); p <= s.positions[first + 2]; ++p)
      CHECK(std::count(held.begin(), held.end(), p) == 1);  // the window is held
  }
  attendre_layer_destroy(layer);

  config.memory.n_recent = 8;  // 1 + 8 = M is the largest window
  C_OK(attendre_layer_create(c.context, &config, &layer));
  attendre_layer_destroy(layer);
  config.memory.n_recent = 9;
  layer = nullptr;
  check_refused(attendre_layer_create(c.context, &config, &layer), ATTENDRE_ERROR_INFEASIBLE_CONFIG,
                "W=9");
  CHECK(layer == nullptr);
}
