// Errors as values (include/attendre/status.hpp): Status and Result, the
// propagation macros, and the failures of the configuration checks, of
// driving a stack (sampling, reading, generation, perplexity) and of the
// device layer, K/V memory and stack: each with its code and the message
// naming the problem, leaving the object usable. (That value_or_throw and
// or_throw throw a Result's or Status's failure as attendre::Error is
// checked once, in "status: Result holds a value or the failure".)
#include "core/try.hpp"
#include "stack_support.hpp"
#include "support.hpp"

#include <attendre/config.hpp>
#include <attendre/encoder_decoder.hpp>
#include <attendre/generate.hpp>
#include <attendre/gpu.hpp>
#include <attendre/gpu_stack.hpp>
#include <attendre/reference/layer.hpp>
#include <attendre/memory_plan.hpp>
#include <attendre/perplexity.hpp>
#include <attendre/reference/encoder_decoder.hpp>
#include <attendre/reference/stack.hpp>
#include <attendre/stack.hpp>
#include <attendre/status.hpp>
#include <attendre/tensor.hpp>

#include <doctest/doctest.h>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

using namespace attendre;

namespace {

Result<int> parse_digit(char c) {
  ATTENDRE_REQUIRE(c >= '0' && c <= '9', std::string("not a digit: ") + c);
  return c - '0';
}

Result<int> second_digit(char c) {
  Result<int> digit = parse_digit(c);
  if (!digit.ok()) return std::move(digit).status().within("second");
  return digit;
}

// Two digits through ATTENDRE_TRY_ASSIGN, the second one's failure named.
Result<int> parse_pair(const char* text) {
  ATTENDRE_TRY_ASSIGN(const int tens, parse_digit(text[0]));
  ATTENDRE_TRY_ASSIGN(const int ones, second_digit(text[1]));
  return tens * 10 + ones;
}

Status check_pair(const char* text, int* out) {
  ATTENDRE_TRY(parse_pair(text));
  ATTENDRE_TRY_ASSIGN(*out, parse_pair(text));
  return {};
}

LayerConfig small_layer() {
  LayerConfig c;
  c.shape = {4, 2, 8};
  c.chunk = 4;
  c.q_capacity = 2;
  c.kv.capacity = 16;
  c.retrieval.top_k = 8;
  return c;
}

}  // namespace

TEST_CASE("status: ok, failure, copies and context") {
  const Status ok;
  CHECK(ok.ok());
  const Status failed(ErrorCode::malformed_input, "bad header");
  REQUIRE_FALSE(failed.ok());
  CHECK(failed.code() == ErrorCode::malformed_input);
  CHECK(failed.message() == "bad header");

  Status copy = failed;  // a deep copy: the original keeps its message
  copy = Status(copy).within("model.gguf");
  CHECK(copy.message() == "model.gguf: bad header");
  CHECK(failed.message() == "bad header");
  CHECK(Status().within("ignored").ok());

  Status assigned;
  assigned = failed;
  CHECK(assigned.code() == ErrorCode::malformed_input);
  assigned = Status();
  CHECK(assigned.ok());
}

TEST_CASE("status: Result holds a value or the failure, and throws it as Error") {
  Result<std::unique_ptr<int>> value(std::make_unique<int>(7));  // move-only values
  REQUIRE(value.ok());
  CHECK(**value == 7);
  std::unique_ptr<int> taken = std::move(value).value_or_throw();
  CHECK(*taken == 7);

  Result<std::string> failed(Status(ErrorCode::io_error, "cannot open x"));
  CHECK_FALSE(failed.ok());
  CHECK(failed.status().code() == ErrorCode::io_error);
  try {
    (void)std::move(failed).value_or_throw();
    FAIL("value_or_throw returned on a failure");
  } catch (const Error& e) {
    CHECK(e.code() == ErrorCode::io_error);
    CHECK(std::string(e.what()) == "cannot open x");
  }
  CHECK_NOTHROW(Status().or_throw());
  CHECK_THROWS_AS(invalid_argument("x").or_throw(), Error);
}

TEST_CASE("status: the macros return the first failure and assign values") {
  CHECK(parse_pair("42").value() == 42);
  const Result<int> first = parse_pair("x2");
  REQUIRE_FALSE(first.ok());
  CHECK(first.status().code() == ErrorCode::invalid_argument);
  CHECK(first.status().message() == "not a digit: x");
  const Result<int> second = parse_pair("4y");
  REQUIRE_FALSE(second.ok());
  CHECK(second.status().message() == "second: not a digit: y");

  int out = -1;
  CHECK(check_pair("17", &out).ok());
  CHECK(out == 17);
  out = -1;
  const Status failed = check_pair("1z", &out);
  CHECK(failed.message() == "second: not a digit: z");
  CHECK(out == -1);  // nothing assigned past the failure
}

TEST_CASE("status: configuration checks fail naming the field") {
  CHECK(small_layer().check().ok());

  // One bad field at a time, each kind of check: shapes, counts, fp32
  // ranges, feasibility.
  const auto bad = [](auto&& edit) {
    LayerConfig c = small_layer();
    edit(c);
    return c;
  };
  struct Case {
    LayerConfig config;
    ErrorCode code;
    std::string message;
  };
  const ErrorCode invalid = ErrorCode::invalid_argument, infeasible = ErrorCode::infeasible_config;
  const Case cases[] = {
      {bad([](LayerConfig& c) { c.shape.heads_q = 3; }), invalid, "heads_q (3) must be a multiple of heads_kv (2)"},
      {bad([](LayerConfig& c) { c.chunk = 0; }), invalid, "chunk size S must be at least 1"},
      {bad([](LayerConfig& c) { c.retrieval.top_k = 0; }), invalid, "top-K must be at least 1"},
      {bad([](LayerConfig& c) { c.kv.policy.lambda = -1.0; }), invalid, "lfa lambda must be >= 0, got -1"},
      {bad([](LayerConfig& c) { c.kv.policy.lambda = 1e-300; }), invalid,
       "lfa lambda is 1e-300: it must be 0 or a float32 magnitude in [1.18e-38, 3.4e38]"},
      {bad([](LayerConfig& c) { c.kv.n_sink = 17; }), infeasible,
       "infeasible: protect_new needs M >= S + n_sink, got M=16 S=4 n_sink=17"},
      {bad([](LayerConfig& c) {
         c.kv.protect_new = true;
         c.kv.n_sink = 13;
       }),
       infeasible, "infeasible: protect_new needs M >= S + n_sink, got M=16 S=4 n_sink=13"},
  };
  for (const Case& c : cases) {
    const Status status = c.config.check();
    REQUIRE_FALSE(status.ok());
    CHECK(status.message() == c.message);
    CHECK(status.code() == c.code);
  }

  // A stack names the block whose attention fails.
  StackConfig stack;
  stack.hidden = 8;
  stack.chunk = 4;
  stack.blocks.resize(2);
  for (BlockConfig& b : stack.blocks) {
    b.attention = small_layer();
    b.ffn = 16;
  }
  CHECK(stack.check().ok());
  stack.blocks[1].attention.retrieval.top_k = 0;
  const Status block = stack.check();
  REQUIRE_FALSE(block.ok());
  CHECK(block.message() == "block 1: top-K must be at least 1");
  CHECK(block.code() == ErrorCode::invalid_argument);
}

TEST_CASE("status: memory plans refuse without changing the configuration") {
  CHECK_FALSE(MemorySetting::full_context(uint64_t{1} << 33, 4).ok());
  CHECK(MemorySetting::full_context(100, 4)->kv.capacity == 100);
  CHECK(MemorySetting::full_bidirectional(100, 4)->q_capacity == 100);

  StackConfig stack;
  stack.hidden = 8;
  stack.chunk = 4;
  stack.blocks.resize(1);
  stack.blocks[0].attention = small_layer();
  stack.blocks[0].rope = false;
  const StackConfig before = stack;
  MemoryPlan plan;
  plan.chunk = 8;
  plan.all = MemorySetting::full_context(64, 8).value();
  plan.all.lm_infinite.enabled = true;  // no block has RoPE
  const Status lm = apply_memory(stack, plan);
  REQUIRE_FALSE(lm.ok());
  CHECK(lm.message() == "LM-Infinite caps RoPE distances, and no block of this stack uses RoPE");
  CHECK(stack.chunk == before.chunk);
  CHECK(stack.blocks[0].attention.kv.capacity == before.blocks[0].attention.kv.capacity);

  plan.all.lm_infinite.enabled = false;
  plan.blocks[3] = plan.all;  // a block the stack does not have
  CHECK(apply_memory(stack, plan).message() == "a memory override names block 3 of a stack of 1 blocks");
  plan.blocks.clear();
  REQUIRE(apply_memory(stack, plan).ok());
  CHECK(stack.chunk == 8);
  CHECK(stack.blocks[0].attention.kv.capacity == 64);

  CHECK(encoded_bytes(ElementType::q8_0, 64).value() == 2 * 34);
  CHECK(encoded_bytes(ElementType::q8_0, 33).status().code() == ErrorCode::invalid_argument);
}

namespace {

// Causal, as perplexity needs.
StackConfig reference_stack() {
  StackConfig c = test::small_stack(2, {2, 1, 8}, 4, 2, 8, 4, Policy::lru());
  for (BlockConfig& b : c.blocks) b.attention.retrieval.causal = true;
  return c;
}

}  // namespace

TEST_CASE("status: driving a stack fails naming the problem, and the stack goes on") {
  RandomWeights weights(7);
  reference::Stack stack(reference_stack(), weights);
  const test::TokenStream tokens = test::random_tokens(12, stack.config().vocab, 8);

  // Sampling, generation and perplexity refuse, naming the problem.
  SamplingOptions hot;
  hot.temperature = -1.0;
  const std::string hot_message = "sampling temperature must be a finite number >= 0, got -1";
  CHECK(Sampler::create(hot).status().message() == hot_message);
  CHECK(Sampler::create(hot).status().code() == ErrorCode::invalid_argument);
  Result<Sampler> sampler = Sampler::create({});
  REQUIRE(sampler.ok());
  CHECK(sampler->sample({}).status().message() == "sampling from an empty row of logits");
  const float row[3] = {0.5f, 2.0f, -1.0f};
  CHECK(sampler->sample(row).value() == 1);
  const std::vector<uint32_t> one_token{tokens.tokens[0]};
  const Result<PerplexityResult> short_text = perplexity(stack, one_token);
  CHECK(short_text.status().code() == ErrorCode::invalid_argument);
  CHECK(short_text.status().message() == "perplexity needs at least 2 tokens, got 1");
  GenerateOptions bad;
  bad.sampling = hot;
  const Result<GenerateResult> refused = generate(stack, tokens.tokens, bad);
  CHECK(refused.status().code() == ErrorCode::invalid_argument);
  CHECK(refused.status().message() == hot_message);
  const Result<StackOutput> flushed = stack.finish({}, true);
  CHECK(flushed.status().message() == "flush needs a stack built with flush_capable");
  CHECK(stack.snapshot(9).status().message() == "no block 9");

  // Nothing above changed the stack: its perplexity equals a fresh one's.
  const Result<PerplexityResult> scored = perplexity(stack, tokens.tokens);
  REQUIRE_MESSAGE(scored.ok(), scored.status().message());
  reference::Stack fresh(reference_stack(), weights);
  const Result<PerplexityResult> fresh_scored = perplexity(fresh, tokens.tokens);
  REQUIRE_MESSAGE(fresh_scored.ok(), fresh_scored.status().message());
  CHECK(scored->mean_nll == fresh_scored->mean_nll);
  CHECK(std::isfinite(scored->mean_nll));
  CHECK(scored->predicted == tokens.tokens.size() - 1);
  // Finished: step() is refused, decode() runs.
  const Result<StackOutput> late = stack.step(tokens.chunk(0, 4));
  CHECK(late.status().message() == "step() after finish(): use decode()");
  CHECK(stack.decode(test::OnePosition{tokens.tokens[0], 12}.chunk()).ok());
}

TEST_CASE("status: an encoder-decoder refuses out-of-order calls as values") {
  EncoderDecoderConfig c;
  c.encoder = test::small_stack(1, {2, 1, 8}, 4, 0, 8, 4, Policy::fifo());
  c.encoder_memory = 8;
  c.decoder = test::small_stack(2, {2, 1, 8}, 1, 0, 8, 8, Policy::lru());
  c.decoder.blocks[0].ffn = 0;
  c.decoder.blocks[0].attention.retrieval.causal = true;
  BlockConfig& cross = c.decoder.blocks[1];
  cross.cross_attention = true;
  cross.rope = false;
  cross.attention.kv.capacity = 8;
  cross.attention.retrieval.top_k = 8;
  cross.attention.kv.policy = Policy::fifo();
  RandomWeights weights(9);
  reference::EncoderDecoder model(c, weights);
  const test::OnePosition start{0, 0};
  CHECK(model.decode(start.chunk()).status().message() == "decode() before finish_encoding()");
  const std::vector<uint32_t> empty;
  CHECK(generate(model, empty, 0, {}).status().message() == "nothing to encode: the input is empty");
  CHECK(model.finish_encoding().ok());
  CHECK(model.finish_encoding().message() == "finish_encoding() twice");
  CHECK(model.decode(start.chunk()).ok());
}

namespace {

// RandomWeights, except tensor `broken`, whose reading fails as a file's
// would (in type_of too, when `types` is set); `missing` it lacks.
class BrokenWeights final : public WeightSource {
 public:
  BrokenWeights(std::string broken, bool types, std::string missing = "")
      : broken_(std::move(broken)), missing_(std::move(missing)), types_(types) {}
  Result<std::optional<ElementType>> type_of(const std::string& name, std::span<const uint64_t> shape) override {
    if (types_ && name == broken_) return failure(name);
    if (name == missing_) return std::optional<ElementType>();
    return inner_.type_of(name, shape);
  }
  Result<std::optional<TensorView>> tensor(const std::string& name, std::span<const uint64_t> shape) override {
    if (name == broken_) return failure(name);
    if (name == missing_) return std::optional<TensorView>();
    return inner_.tensor(name, shape);
  }
  static Status failure(const std::string& name) {
    return {ErrorCode::malformed_input, "weights.gguf: tensor '" + name + "' ends past the end of the file"};
  }

 private:
  RandomWeights inner_{11};
  std::string broken_, missing_;
  bool types_;
};

}  // namespace

TEST_CASE("status: a device layer refuses naming the problem, and then runs as the reference") {
  LayerConfig bad = small_layer();
  bad.shape.heads_q = 3;
  const Result<std::unique_ptr<gpu::Layer>> refused = gpu::Layer::create(test::gpu(), bad);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.status().code() == ErrorCode::invalid_argument);
  CHECK(refused.status().message() == "heads_q (3) must be a multiple of heads_kv (2)");

  // Past the device's limits: a 1 MiB storage range refuses a 5 MiB K/V memory.
  ContextOptions options;
  options.limits = LimitOverrides{std::nullopt, std::nullopt, uint64_t{1} << 20};
  auto narrow_owner = Context::create(options).value_or_throw();
  Context& narrow = *narrow_owner;
  LayerConfig big = small_layer();
  big.kv.capacity = 40000;
  const Result<std::unique_ptr<gpu::Layer>> too_big = gpu::Layer::create(narrow, big);
  REQUIRE_FALSE(too_big.ok());
  CHECK(too_big.status().code() == ErrorCode::unsupported);
  CHECK(too_big.status().message() ==
        "K/V memory needs 5 MiB, over the device's storage-buffer range of 1 MiB; lower M, heads_kv or head_dim");
  test::check_no_validation_messages(narrow);

  // Refused calls change nothing: the stream then runs as on the reference.
  const LayerConfig c = small_layer();
  Result<std::unique_ptr<gpu::Layer>> made = gpu::Layer::create(test::gpu(), c);
  REQUIRE_MESSAGE(made.ok(), made.status().message());
  gpu::Layer& layer = **made;
  const test::Stream s = test::random_stream(c.shape, 23, 41, {0.2});
  const ChunkView too_long = s.chunk(0, c.chunk + 1);
  const Result<StepResult> long_step = layer.step(too_long);
  REQUIRE_FALSE(long_step.ok());
  CHECK(long_step.status().code() == ErrorCode::invalid_argument);
  CHECK(long_step.status().message() == "chunk has 5 rows, more than the layer's S=4");
  StepRequest evicted;
  evicted.evicted = true;
  CHECK(layer.flush(evicted).status().message() == "a flush step inserts nothing, so it evicts nothing");
  CHECK(layer.step(s.chunk(0, c.chunk), evicted).status().message() ==
    "evicted entries requested but copy_out_evicted is off");
  reference::Layer cpu(c);
  const std::vector<test::StepRecord> expected = test::run_stream(cpu, s);
  test::check_runs_match(expected, test::run_stream(layer, s), 2e-4, 2e-4, "after refused calls");

  // Tickets: one from another layer, then one collected already.
  Result<std::unique_ptr<gpu::Layer>> other = gpu::Layer::create(test::gpu(), c);
  REQUIRE(other.ok());
  const Result<Ticket> ticket = layer.submit(s.chunk(0, 0));
  REQUIRE(ticket.ok());
  CHECK((*other)->result(*ticket).status().message() == "result: the ticket comes from another object's submit");
  CHECK(layer.result(*ticket).ok());
  const Result<StepResult> again = layer.result(*ticket);
  CHECK(again.status().code() == ErrorCode::invalid_argument);
  CHECK(again.status().message().find("'s result was collected already") != std::string::npos);
  CHECK(layer.wait().ok());
  test::check_no_validation_messages(test::gpu());
}

TEST_CASE("status: a device K/V memory refuses a bad chunk as a value, then inserts as the reference") {
  const AttentionShape shape{4, 2, 8};
  KvMemoryConfig kv;
  kv.capacity = 6;
  kv.policy = Policy::lru();
  kv.copy_out_evicted = true;
  RetrievalConfig retrieval;
  retrieval.top_k = 4;
  KvMemoryConfig empty = kv;
  empty.capacity = 0;
  const auto no_room = gpu::KeyValueMemory::create(test::gpu(), shape, empty, retrieval, 4, 4);
  REQUIRE_FALSE(no_room.ok());
  CHECK(no_room.status().code() == ErrorCode::invalid_argument);
  CHECK(no_room.status().message() == "K/V capacity M must be at least 1");

  auto made = gpu::KeyValueMemory::create(test::gpu(), shape, kv, retrieval, 4, 4);
  REQUIRE_MESSAGE(made.ok(), made.status().message());
  gpu::KeyValueMemory& memory = **made;
  const test::Stream s = test::random_stream(shape, 17, 43);
  const ChunkView too_long = s.chunk(0, 5);
  const Result<EvictedEntries> refused = memory.insert(too_long);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.status().code() == ErrorCode::invalid_argument);
  CHECK(refused.status().message() == "chunk has 5 rows, more than the layer's S=4");
  CHECK(memory.retrieve(s.chunk(0, 5)).status().message() == "retrieve() got 5 queries, more than 4");

  reference::KeyValueMemory cpu(shape, kv, 4);
  for (uint32_t first = 0; first < s.rows; first += 4) {
    const ChunkView rows = s.chunk(first, std::min(4u, s.rows - first));
    const Result<EvictedEntries> got = memory.insert(rows);
    REQUIRE_MESSAGE(got.ok(), got.status().message());
    const EvictedEntries expected = cpu.insert(rows);
    CHECK(got->positions == expected.positions);
    CHECK(got->scores == expected.scores);
    CHECK(got->keys == expected.keys);
    CHECK(got->values == expected.values);
  }
  const Result<MemorySnapshot> held = memory.snapshot();
  REQUIRE(held.ok());
  CHECK(held->positions == cpu.snapshot().positions);
  CHECK(held->scores == cpu.snapshot().scores);
  test::check_no_validation_messages(test::gpu());
}

TEST_CASE("status: a device stack reports the weight source's own failure, and its layout check, as values") {
  const StackConfig config = reference_stack();
  const std::string broken = "blk.1.ffn_up.weight";
  const Status expected = BrokenWeights::failure(broken);

  // The source's failure comes through with its code and message, not as a missing tensor.
  BrokenWeights unreadable(broken, false);
  const Result<std::unique_ptr<gpu::Stack>> loaded = gpu::Stack::create(test::gpu(), config, unreadable);
  REQUIRE_FALSE(loaded.ok());
  CHECK(loaded.status().code() == ErrorCode::malformed_input);
  CHECK(loaded.status().message() == expected.message());
  BrokenWeights untyped(broken, true);
  const Result<gpu::StackLayout> planned = gpu::plan_stack_layout(config, test::gpu().caps(), untyped);
  CHECK(planned.status().code() == ErrorCode::malformed_input);
  CHECK(planned.status().message() == expected.message());
  CHECK(gpu::Stack::create(test::gpu(), config, untyped).status().message() == expected.message());
  BrokenWeights lacking("", false, broken);
  const Result<std::unique_ptr<gpu::Stack>> missing = gpu::Stack::create(test::gpu(), config, lacking);
  CHECK(missing.status().code() == ErrorCode::invalid_argument);
  CHECK(missing.status().message() == "the weights have no tensor '" + broken + "'");

  // Nothing of the failed loads is left in flight: a stack on the same
  // context then steps as the reference does.
  RandomWeights weights(11);
  Result<std::unique_ptr<gpu::Stack>> made = gpu::Stack::create(test::gpu(), config, weights);
  REQUIRE_MESSAGE(made.ok(), made.status().message());
  reference::Stack cpu(config, weights);
  const test::TokenStream tokens = test::random_tokens(8, config.vocab, 45);
  for (uint32_t first = 0; first < 8; first += config.chunk) {
    const Result<StackOutput> got = (*made)->step(tokens.chunk(first, config.chunk));
    REQUIRE_MESSAGE(got.ok(), got.status().message());
    const StackOutput want = cpu.step(tokens.chunk(first, config.chunk)).value_or_throw();
    REQUIRE(got->positions == want.positions);
    REQUIRE(got->hidden.size() == want.hidden.size());
    for (size_t i = 0; i < want.hidden.size(); ++i) CHECK(got->hidden[i] == doctest::Approx(want.hidden[i]).epsilon(1e-3));
  }
  CHECK((*made)->snapshot(5).status().message() == "no block 5");
  CHECK((*made)->record(VK_NULL_HANDLE, {}).status().message() == "record: no command buffer");

  // The layout check: within this device, and past a storage range one
  // byte short of the largest buffer, which it names.
  const Result<gpu::StackLayout> layout = gpu::plan_stack_layout(config, test::gpu().caps(), weights);
  REQUIRE(layout.ok());
  CHECK(layout->check(test::gpu().caps()).ok());
  const gpu::PlannedBuffer* largest = &layout->buffers.front();
  for (const gpu::PlannedBuffer& b : layout->buffers)
    if (b.bytes > largest->bytes) largest = &b;
  DeviceCaps narrow = test::gpu().caps();
  narrow.max_storage_range = largest->bytes - 1;
  const Status past = layout->check(narrow);
  REQUIRE_FALSE(past.ok());
  CHECK(past.code() == ErrorCode::unsupported);
  CHECK(past.message().rfind("'" + largest->name + "' needs ", 0) == 0);
  CHECK(past.message().find("in one buffer, over the device's storage-buffer range of") != std::string::npos);
  test::check_no_validation_messages(test::gpu());
}
