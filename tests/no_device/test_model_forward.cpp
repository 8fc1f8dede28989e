// Models read from GGUF files through the float64 reference: with unbounded
// memories (N = 0, causal, fifo, M >= T, K = M) the stack's logits equal the
// ordinary full-context forward (reference::dense_forward) on the fixtures of
// every weight type and on the real files, whose greedy continuations are
// llama.cpp's; generation stops on EOS; perplexity scores next tokens.
#include "model_checks.hpp"
#include "model_fixtures.hpp"
#include "gguf_test_support.hpp"

#include <attendre/perplexity.hpp>

#include <cmath>

using namespace attendre;
using gguf::TensorType;

namespace {

using test::dense_greedy;
using test::dense_logits;
using test::max_difference;
using test::stack_logits;
using test::unbounded;

using test::kFixturePrompt;

}  // namespace

TEST_CASE("model forward: unbounded memories equal the dense forward on fixtures of every weight type (reference)") {
  test::GgufTempDir dir;
  for (const test::FixtureShape& shape : test::fixture_shapes()) {
    INFO(shape.name());
    Model model = Model::open(test::write_fixture(dir.path, shape, 21)).value_or_throw();
    const StackConfig config = model.stack_config(unbounded(kFixturePrompt.size(), 5)).value_or_throw();
    reference::Stack stack(config, model.weights());
    const std::vector<float> dense = dense_logits(model, config, kFixturePrompt);
    CHECK(max_difference(stack_logits(stack, kFixturePrompt), dense) < 1e-5);

    // The comparison can fail: a memory of 6 forgets most of the prompt.
    MemoryPlan bounded = unbounded(kFixturePrompt.size(), 5);
    bounded.all.kv.capacity = bounded.all.top_k = 6;
    reference::Stack forgetful(model.stack_config(bounded).value_or_throw(), model.weights());
    CHECK(max_difference(stack_logits(forgetful, kFixturePrompt), dense) > 1e-2);
  }
}

TEST_CASE("model forward: the real files' greedy continuations equal the dense forward's and llama.cpp's (reference)") {
  const auto models = test::shared_models();
  if (!models) return;
  constexpr uint32_t kTokens = test::kContinuationTokens;
  for (const test::RealModel& e : test::kRealModels) {
    INFO(e.file);
    Model model = Model::open(*models / e.file).value_or_throw();
    const std::vector<uint32_t> prompt = model.tokenizer().encode("Once upon a time").value_or_throw();
    const StackConfig config = model.stack_config(unbounded(prompt.size() + kTokens, 4)).value_or_throw();
    reference::Stack stack(config, model.weights());
    GenerateOptions options;
    options.max_tokens = kTokens;
    options.stop_tokens = model.tokenizer().stop_tokens();
    const GenerateResult result = generate(stack, prompt, options).value_or_throw();
    CHECK(result.tokens == dense_greedy(model, config, prompt, kTokens));
    std::vector<uint32_t> all = prompt;
    all.insert(all.end(), result.tokens.begin(), result.tokens.end());
    const std::string text = model.tokenizer().decode(all).value_or_throw().substr(std::string("Once upon a time").size());
    MESSAGE(e.file << " continues: " << text);
    if (e.continuation) CHECK(text == e.continuation);
  }
}

TEST_CASE("model forward: generation stops on a stop token, keeps the prompt's logits, and samples reproducibly") {
  test::GgufTempDir dir;
  Model model = Model::open(test::write_fixture(dir.path, test::FixtureShape{}, 8)).value_or_throw();
  const StackConfig config = model.stack_config(unbounded(kFixturePrompt.size() + 8, 4)).value_or_throw();
  GenerateOptions options;
  options.max_tokens = 8;
  options.prompt_logits = true;
  reference::Stack first(config, model.weights());
  const GenerateResult greedy = generate(first, kFixturePrompt, options).value_or_throw();
  REQUIRE(greedy.tokens.size() == 8);
  CHECK_FALSE(greedy.stopped);
  CHECK(max_difference(greedy.prompt_logits, dense_logits(model, config, kFixturePrompt)) < 1e-5);
  CHECK(greedy.prompt_tokens == kFixturePrompt.size());
  CHECK(greedy.read_tokens_per_s() > 0.0);

  // A stop token ends it and is not kept; the streamed tokens are the result's.
  options.stop_tokens = {greedy.tokens[3]};
  options.prompt_logits = false;
  reference::Stack second(config, model.weights());
  std::vector<uint32_t> streamed;
  const GenerateResult stopped = generate(second, kFixturePrompt, options, [&](uint32_t t) { streamed.push_back(t); }).value_or_throw();
  CHECK(stopped.stopped);
  CHECK(stopped.tokens == std::vector<uint32_t>(greedy.tokens.begin(), greedy.tokens.begin() + 3));
  CHECK(streamed == stopped.tokens);
  CHECK(stopped.prompt_logits.empty());

  options.stop_tokens.clear();
  options.sampling = {1.5, 0.95, 77};
  std::vector<std::vector<uint32_t>> runs;
  for (uint64_t seed : {77, 77, 78}) {
    options.sampling.seed = seed;
    reference::Stack stack(config, model.weights());
    runs.push_back(generate(stack, kFixturePrompt, options).value_or_throw().tokens);
  }
  CHECK(runs[0] == runs[1]);
  CHECK(runs[0] != runs[2]);
  CHECK(runs[0] != greedy.tokens);
}

TEST_CASE("model forward: perplexity is the exponent of the dense forward's mean next-token loss, causal only") {
  test::GgufTempDir dir;
  Model model = Model::open(test::write_fixture(dir.path, test::FixtureShape::for_type("qwen2", TensorType::f32), 9)).value_or_throw();
  const StackConfig config = model.stack_config(unbounded(kFixturePrompt.size(), 4)).value_or_throw();
  const std::vector<float> logits = dense_logits(model, config, kFixturePrompt);
  double nll = 0.0;
  for (size_t t = 0; t + 1 < kFixturePrompt.size(); ++t) {
    const float* row = logits.data() + t * config.vocab;
    double sum = 0.0;
    for (uint32_t v = 0; v < config.vocab; ++v) sum += std::exp(static_cast<double>(row[v]));
    nll += std::log(sum) - row[kFixturePrompt[t + 1]];
  }
  nll /= static_cast<double>(kFixturePrompt.size() - 1);
  reference::Stack stack(config, model.weights());
  uint64_t reported = 0;
  const PerplexityResult r = perplexity(stack, kFixturePrompt, false, [&](uint64_t scored, uint64_t total, double p) {
    CHECK(scored > reported);
    CHECK(total == kFixturePrompt.size() - 1);
    CHECK(std::isfinite(p));
    reported = scored;
  }).value_or_throw();
  CHECK(reported == kFixturePrompt.size() - 1);
  CHECK(r.predicted == kFixturePrompt.size() - 1);
  CHECK(r.mean_nll == doctest::Approx(nll).epsilon(1e-6));
  CHECK(r.perplexity == doctest::Approx(std::exp(nll)).epsilon(1e-6));

  MemoryPlan peeking = unbounded(kFixturePrompt.size(), 4);
  peeking.all.q_capacity = 4;
  peeking.all.causal = false;
  reference::Stack bidirectional(model.stack_config(peeking).value_or_throw(), model.weights());
  test::check_error([&] { perplexity(bidirectional, kFixturePrompt).value_or_throw(); }, ErrorCode::invalid_argument,
                    "perplexity needs a causal stack: block 0 lets queries see later positions");
  reference::Stack again(config, model.weights());
  test::check_error([&] { perplexity(again, std::vector<uint32_t>{1}).value_or_throw(); }, ErrorCode::invalid_argument,
                    "perplexity needs at least 2 tokens, got 1");
}
