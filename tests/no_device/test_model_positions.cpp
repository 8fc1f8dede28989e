// Positions of models read from GGUF files, on the float64 reference: RoPE
// scaling from metadata (linear, llama3 from keys or as rope_freqs.weight,
// phi3's LongRoPE tables) runs the
// published formulas, and LM-Infinite set by a memory plan reaches every
// RoPE block; with unbounded memories the stack equals the dense forward.
#include "model_checks.hpp"
#include "model_fixtures.hpp"
#include "gguf_test_support.hpp"
#include "model_test_support.hpp"

using namespace attendre;
using gguf::TensorType;

namespace {

// The dense forward's logits of kFixturePrompt at `positions`.
std::vector<float> dense_at(Model& model, const StackConfig& config, std::span<const int64_t> positions) {
  StackChunk c;
  c.rows = static_cast<uint32_t>(test::kFixturePrompt.size());
  c.tokens = test::kFixturePrompt;
  c.positions = positions;
  StackRequest request;
  request.logits = true;
  return reference::dense_forward(config, model.weights(), c, true, request).logits;
}

test::FixtureShape scaled(const std::string& scaling) {
  test::FixtureShape shape;
  shape.rope_scaling = scaling;
  return shape;
}

}  // namespace

TEST_CASE("model positions: linear RoPE scaling by 4 turns position 4t as unscaled RoPE turns t") {
  test::GgufTempDir dir;
  Model linear = Model::open(test::write_fixture(dir.path, scaled("linear"), 29)).value_or_throw();
  Model plain = Model::open(test::write_fixture(dir.path, scaled(""), 29)).value_or_throw();  // the same tensors, no scaling keys
  const size_t T = test::kFixturePrompt.size();
  const StackConfig config = linear.stack_config(test::unbounded(T, 4)).value_or_throw();
  CHECK(config.blocks[1].rope_scaling.kind == RopeScaling::Kind::linear);
  CHECK(config.blocks[1].rope_scaling.factor == 4.0);
  std::vector<int64_t> spread(T), dense(T);
  for (size_t i = 0; i < T; ++i) spread[i] = 4 * static_cast<int64_t>(i), dense[i] = static_cast<int64_t>(i);
  const std::vector<float> unscaled = dense_at(plain, plain.stack_config(test::unbounded(T, 4)).value_or_throw(), dense);
  CHECK(test::max_difference(dense_at(linear, config, spread), unscaled) < 1e-5);
  // The comparison can fail: the same positions under the scaled model differ.
  CHECK(test::max_difference(dense_at(linear, config, dense), unscaled) > 1e-3);
  // The stack with unbounded memories is the dense forward.
  reference::Stack stack(config, linear.weights());
  CHECK(test::max_difference(test::stack_logits(stack, test::kFixturePrompt), test::dense_logits(linear, config, test::kFixturePrompt)) < 1e-5);
}

TEST_CASE("model positions: rope_freqs.weight as convert_hf_to_gguf.py writes it for llama3 is Meta's apply_scaling") {
  test::GgufTempDir dir;
  Model model = Model::open(test::write_fixture(dir.path, scaled("llama3"), 31)).value_or_throw();
  const size_t T = test::kFixturePrompt.size();
  const StackConfig config = model.stack_config(test::unbounded(T, 4)).value_or_throw();
  CHECK(config.blocks[0].rope_scaling.freq_factors);
  CHECK(config.blocks[0].rope_scaling.kind == RopeScaling::Kind::none);
  // The same weights under the formula itself (the tensor is then unread).
  StackConfig formula = config;
  for (BlockConfig& b : formula.blocks) {
    b.rope_scaling.freq_factors = false;
    b.rope_scaling.kind = RopeScaling::Kind::llama3;
    b.rope_scaling.factor = 8.0;
    b.rope_scaling.low_freq_factor = 1.0;
    b.rope_scaling.high_freq_factor = 4.0;
    b.rope_scaling.original_context = test::kLlama3OriginalContext;
  }
  std::vector<int64_t> positions(T);
  for (size_t i = 0; i < T; ++i) positions[i] = 100 * static_cast<int64_t>(i);  // far enough for the slow pairs to matter
  const std::vector<float> from_tensor = dense_at(model, config, positions);
  CHECK(test::max_difference(from_tensor, dense_at(model, formula, positions)) < 1e-5);
  StackConfig unscaled = config;
  for (BlockConfig& b : unscaled.blocks) b.rope_scaling = {};
  CHECK(test::max_difference(from_tensor, dense_at(model, unscaled, positions)) > 1e-3);
  reference::Stack stack(config, model.weights());
  CHECK(test::max_difference(test::stack_logits(stack, test::kFixturePrompt), test::dense_logits(model, config, test::kFixturePrompt)) < 1e-5);
}

TEST_CASE("model positions: llama3 scaling from rope.scaling.* keys is the formula rope_freqs.weight tabulates") {
  test::GgufTempDir dir;
  const std::filesystem::path plain = test::write_fixture(dir.path, scaled(""), 31);
  const std::filesystem::path keyed = dir.path / "llama3-keys.gguf";
  const auto f32 = [](double v) { return std::optional(gguf::MetadataValue::f32(static_cast<float>(v))); };
  test::rewrite_gguf(plain, keyed,
                     {{{"llama.rope.scaling.type", gguf::MetadataValue::string("llama3")},
                       {"llama.rope.scaling.factor", f32(8.0)},
                       {"llama.rope.scaling.low_freq_factor", f32(1.0)},
                       {"llama.rope.scaling.high_freq_factor", f32(4.0)},
                       {"llama.rope.scaling.original_context_length",
                        gguf::MetadataValue::u32(static_cast<uint32_t>(test::kLlama3OriginalContext))}}});
  Model from_keys = Model::open(keyed).value_or_throw();
  // The same seed: the same weights, with the factors as a tensor instead.
  Model from_tensor = Model::open(test::write_fixture(dir.path, scaled("llama3"), 31)).value_or_throw();
  const size_t T = test::kFixturePrompt.size();
  const StackConfig config = from_keys.stack_config(test::unbounded(T, 4)).value_or_throw();
  const RopeScaling& s = config.blocks[1].rope_scaling;
  CHECK(s.kind == RopeScaling::Kind::llama3);
  CHECK_FALSE(s.freq_factors);
  CHECK((s.factor == 8.0 && s.low_freq_factor == 1.0 && s.high_freq_factor == 4.0 &&
         s.original_context == test::kLlama3OriginalContext));
  std::vector<int64_t> positions(T);
  for (size_t i = 0; i < T; ++i) positions[i] = 100 * static_cast<int64_t>(i);
  CHECK(test::max_difference(dense_at(from_keys, config, positions),
                             dense_at(from_tensor, from_tensor.stack_config(test::unbounded(T, 4)).value_or_throw(), positions)) < 1e-5);
  // Without original_context_length and the frequency factors, Meta's defaults (8192, 1, 4).
  test::rewrite_gguf(plain, keyed, {{{"llama.rope.scaling.type", gguf::MetadataValue::string("llama3")}}});
  const RopeScaling defaults = Model::open(keyed).value_or_throw().stack_config(test::unbounded(T, 4)).value_or_throw().blocks[0].rope_scaling;
  CHECK((defaults.kind == RopeScaling::Kind::llama3 && defaults.factor == 1.0 && defaults.original_context == 8192 &&
         defaults.low_freq_factor == 1.0 && defaults.high_freq_factor == 4.0));
}

TEST_CASE("model positions: LongRoPE turns with the short table for memories within the original context, the long one past it") {
  test::GgufTempDir dir;
  // The same seed: the same weights. llama3's file holds the short table as
  // rope_freqs.weight; the long table is twice it, which linear scaling by
  // 2 on top of the same divisors gives.
  Model long_rope = Model::open(test::write_fixture(dir.path, scaled("longrope"), 31)).value_or_throw();
  Model tabulated = Model::open(test::write_fixture(dir.path, scaled("llama3"), 31)).value_or_throw();
  const size_t T = test::kFixturePrompt.size();
  REQUIRE(T <= test::kLlama3OriginalContext);
  const uint32_t beyond = 2 * static_cast<uint32_t>(test::kLlama3OriginalContext);
  const StackConfig within = long_rope.stack_config(test::unbounded(T, 4)).value_or_throw();
  const StackConfig past = long_rope.stack_config(test::unbounded(beyond, 4)).value_or_throw();
  for (const StackConfig* c : {&within, &past}) {
    const RopeScaling& s = c->blocks[1].rope_scaling;
    CHECK((s.long_rope && s.freq_factors && s.original_context == test::kLlama3OriginalContext));
  }
  CHECK_FALSE(within.blocks[0].rope_scaling.long_factors);
  CHECK(past.blocks[0].rope_scaling.long_factors);
  // The model's own memory (its whole context of 96) is past the original 32.
  CHECK(long_rope.stack_config(long_rope.default_memory()).value_or_throw().blocks[0].rope_scaling.long_factors);
  // rope.scaling.attn_factor multiplies the rotated q and k (every dim here):
  // the logits by its square.
  const double f = test::kLongRopeAttentionFactor;
  auto expected = [&](uint64_t capacity, bool doubled) {
    StackConfig c = tabulated.stack_config(test::unbounded(capacity, 4)).value_or_throw();
    for (BlockConfig& b : c.blocks) {
      b.attention.retrieval.scale = b.attention.scale() * f * f;
      if (doubled) b.rope_scaling.kind = RopeScaling::Kind::linear, b.rope_scaling.factor = 2.0;
    }
    return c;
  };
  std::vector<int64_t> positions(T);
  for (size_t i = 0; i < T; ++i) positions[i] = 100 * static_cast<int64_t>(i);  // far enough for the slow pairs to matter
  const std::vector<float> short_logits = dense_at(long_rope, within, positions);
  const std::vector<float> long_logits = dense_at(long_rope, past, positions);
  CHECK(test::max_difference(short_logits, dense_at(tabulated, expected(T, false), positions)) < 1e-5);
  CHECK(test::max_difference(long_logits, dense_at(tabulated, expected(beyond, true), positions)) < 1e-5);
  // The comparisons can fail: the tables, and the factor, change the logits.
  CHECK(test::max_difference(short_logits, long_logits) > 1e-3);
  CHECK(test::max_difference(short_logits, dense_at(tabulated, tabulated.stack_config(test::unbounded(T, 4)).value_or_throw(),
                                                    positions)) > 1e-3);
  reference::Stack stack(past, long_rope.weights());
  CHECK(test::max_difference(test::stack_logits(stack, test::kFixturePrompt), test::dense_logits(long_rope, past, test::kFixturePrompt)) < 1e-5);
}

TEST_CASE("model positions: LM-Infinite from a memory plan caps every RoPE block, the dense forward agrees") {
  test::GgufTempDir dir;
  for (const char* architecture : {"llama", "qwen2"}) {
    INFO(architecture);
    Model model = Model::open(test::write_fixture(dir.path, test::FixtureShape::for_type(architecture, TensorType::q8_0), 37)).value_or_throw();
    MemoryPlan plan = test::unbounded(test::kFixturePrompt.size(), 4);
    plan.all.lm_infinite = {true, 5};
    const StackConfig capped = model.stack_config(plan).value_or_throw();
    for (const BlockConfig& b : capped.blocks) CHECK((b.lm_infinite.enabled && b.lm_infinite.n_local == 5));
    reference::Stack stack(capped, model.weights());
    const std::vector<float> dense = test::dense_logits(model, capped, test::kFixturePrompt);
    CHECK(test::max_difference(test::stack_logits(stack, test::kFixturePrompt), dense) < 1e-5);
    // Distances past 5 change: not the uncapped model.
    const StackConfig plain = model.stack_config(test::unbounded(test::kFixturePrompt.size(), 4)).value_or_throw();
    CHECK(test::max_difference(dense, test::dense_logits(model, plain, test::kFixturePrompt)) > 1e-3);
  }
}
