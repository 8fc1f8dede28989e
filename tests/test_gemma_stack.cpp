// What Gemma 2 and 3 add to a decoder stack, on the GPU against the float64
// reference and the dense forward: post-attention and post-FFN norms, the
// GELU (tanh) gate, the embedding scale, attention and final logit
// soft-capping, and sliding windows as fifo memories of W + S - 1 with the
// distance mask (docs/spec-notes.md, "Sliding windows"), at S = 1 and S > 1;
// then a gemma2 fixture file described and run as llama.cpp's graph.
#include "no_device/gguf_test_support.hpp"
#include "model_checks.hpp"
#include "model_fixtures.hpp"
#include "stack_support.hpp"
#include "support.hpp"

#include <attendre/gpu_stack.hpp>
#include <attendre/memory_plan.hpp>
#include <attendre/reference/stack.hpp>

#include <doctest/doctest.h>

#include <cmath>

using namespace attendre;

namespace {

// Three blocks of Gemma's kind; 300 logits per row cross the soft-cap
// kernel's workgroups. Blocks 0 and 2 are local with window `window`.
StackConfig gemma_stack(uint32_t chunk, uint32_t window) {
  StackConfig c = test::small_stack(3, AttentionShape{4, 2, 8}, chunk, 0, 64, 64, Policy::fifo());
  c.vocab = 300;
  c.embedding_scale = std::sqrt(24.0f);
  c.logit_soft_cap = 2.5;  // near the logits' own size: tanh bends them
  for (uint32_t l = 0; l < c.blocks.size(); ++l) {
    BlockConfig& b = c.blocks[l];
    b.post_norms = true;
    b.activation = ActivationKind::gelu_tanh;
    b.attention.retrieval.causal = true;
    b.attention.retrieval.soft_cap = 0.8;
    b.sliding_window = l % 2 == 0 ? window : 0;
  }
  return c;
}

std::vector<float> flat(const std::map<int64_t, test::Emitted>& got, bool logits) {
  std::vector<float> all;
  for (const auto& [position, e] : got) all.insert(all.end(), (logits ? e.logits : e.hidden).begin(), (logits ? e.logits : e.hidden).end());
  return all;
}

double scale_of(const std::vector<float>& values) {
  double scale = 1.0;
  for (float x : values) scale = std::max(scale, std::fabs(static_cast<double>(x)));
  return scale;
}

// The GPU and reference stacks read `s` under `config`; both equal the dense
// forward's logits (valid positions in order) within fp32 accumulation.
void check_stacks_match_dense(const StackConfig& config, const test::TokenStream& s, const StackOutput& dense) {
  RandomWeights weights(7);
  const double scale = scale_of(dense.logits);
  for (const bool on_gpu : {false, true}) {
    INFO((on_gpu ? "gpu" : "reference"));
    std::unique_ptr<TransformerStack> stack;
    if (on_gpu) stack = gpu::Stack::create(test::gpu(), config, weights).value_or_throw();
    else stack = std::make_unique<reference::Stack>(config, weights);
    StackRequest request;
    request.logits = true;
    const std::vector<float> logits = flat(test::run_stack(*stack, s, false, request), true);
    CHECK(test::max_difference(logits, dense.logits) <= 2e-4 * scale);
  }
}

StackOutput dense_of(const StackConfig& config, const test::TokenStream& s) {
  RandomWeights weights(7);
  StackRequest request;
  request.logits = true;
  return reference::dense_forward(config, weights, s.chunk(0, s.rows()), true, request);
}


// A generated gemma file, opened, and a prompt long enough to cross its
// sliding windows twice.
struct OpenedFixture {
  Model model;
  std::vector<uint32_t> prompt;
};

OpenedFixture open_fixture(const std::filesystem::path& path, const std::string& architecture) {
  Model model = Model::open(path).value_or_throw();
  CHECK(model.info().architecture == architecture);
  std::vector<uint32_t> prompt =
      model.tokenizer().encode("Once upon a time, the cat sat on the mat, the cat sat").value_or_throw();
  REQUIRE(prompt.size() > 2 * test::kGemmaWindow);
  return {std::move(model), std::move(prompt)};
}

// The GPU stack's logits against the dense forward's (returned).
std::vector<float> check_gpu_equals_dense(Model& model, const StackConfig& config,
                                          const std::vector<uint32_t>& prompt) {
  const auto device = gpu::Stack::create(test::gpu(), config, model.weights()).value_or_throw();
  std::vector<float> dense = test::dense_logits(model, config, prompt);
  CHECK(test::max_difference(test::stack_logits(*device, prompt), dense) <= 2e-4 * scale_of(dense));
  return dense;
}

}  // namespace

TEST_CASE("gemma stack: post norms, the GELU gate, the embedding scale and both soft-caps match the reference and dense forward") {
  const test::TokenStream s = test::random_tokens(23, 300, 31, 0.1);
  StackConfig config = gemma_stack(5, 0);
  apply_memory(config, test::unbounded(s.rows(), 5)).or_throw();
  const StackOutput dense = dense_of(config, s);
  check_stacks_match_dense(config, s, dense);
  // Each piece moves the logits: a stack without it is another model.
  const double scale = scale_of(dense.logits);
  for (int piece = 0; piece < 5; ++piece) {
    StackConfig other = config;
    if (piece == 0) other.embedding_scale = 1.0;
    if (piece == 1) other.logit_soft_cap = 0.0;
    for (BlockConfig& b : other.blocks) {
      if (piece == 2) b.post_norms = false;
      if (piece == 3) b.activation = ActivationKind::silu;
      if (piece == 4) b.attention.retrieval.soft_cap = 0.0;
    }
    INFO("piece " << piece);
    CHECK(test::max_difference(dense_of(other, s).logits, dense.logits) > 1e-2 * scale);
  }
  test::check_no_validation_messages(test::gpu());
}

TEST_CASE("gemma stack: a model's sliding windows are fifo memories of W + S - 1 with the distance mask, at S = 1, 4 and 16") {
  const uint32_t W = 6;
  const test::TokenStream s = test::random_tokens(41, 300, 32, 0.1);
  for (uint32_t S : {1u, 4u, 16u}) {
    INFO("S = " << S);
    StackConfig config = gemma_stack(S, W);
    apply_memory(config, test::unbounded(s.rows(), S)).or_throw();
    for (uint32_t l : {0u, 2u}) {
      const LayerConfig& a = config.blocks[l].attention;
      CHECK(a.kv.capacity == W + S - 1);
      CHECK(a.retrieval.top_k == a.kv.capacity);
      CHECK(a.retrieval.window == W);
      CHECK(a.kv.policy.kind == PolicyKind::fifo);
      CHECK(a.q_capacity == 0);
    }
    CHECK(config.blocks[1].attention.kv.capacity == std::max(s.rows(), S));
    CHECK(config.blocks[1].attention.retrieval.window == 0);
    const StackOutput dense = dense_of(config, s);
    check_stacks_match_dense(config, s, dense);
    // The windows hide keys: without them the logits differ.
    StackConfig global = config;
    for (BlockConfig& b : global.blocks) b.attention.retrieval.window = 0;
    CHECK(test::max_difference(dense_of(global, s).logits, dense.logits) > 1e-2 * scale_of(dense.logits));
    if (S > 1 && S <= W) {
      // A fifo of W alone (feasible for S <= W) loses keys the chunk's first queries still see.
      StackConfig short_memory = config;
      for (uint32_t l : {0u, 2u}) short_memory.blocks[l].attention.kv.capacity = short_memory.blocks[l].attention.retrieval.top_k = W;
      RandomWeights weights(7);
      reference::Stack stack(short_memory, weights);
      StackRequest request;
      request.logits = true;
      CHECK(test::max_difference(flat(test::run_stack(stack, s, false, request), true), dense.logits) > 1e-3 * scale_of(dense.logits));
    }
  }
  test::check_no_validation_messages(test::gpu());
}

TEST_CASE("gemma stack: a per-block override replaces the model's window, model_windows = false drops them all") {
  StackConfig config = gemma_stack(4, 6);
  MemoryPlan plan = test::unbounded(50, 4);
  MemorySetting lfa = plan.all;
  lfa.kv.capacity = 20;
  lfa.top_k = 8;
  lfa.kv.policy = Policy::lfa(0.01);
  plan.blocks[1] = lfa;  // the global block under an ATTENDRE policy
  plan.blocks[2] = lfa;  // a local block too: its window is gone
  StackConfig windows = config;
  apply_memory(windows, plan).or_throw();
  CHECK(windows.blocks[0].attention.retrieval.window == 6);
  CHECK(windows.blocks[0].attention.kv.capacity == 9);
  for (uint32_t l : {1u, 2u}) {
    CHECK(windows.blocks[l].attention.retrieval.window == 0);
    CHECK(windows.blocks[l].attention.kv.capacity == 20);
    CHECK(windows.blocks[l].attention.kv.policy.kind == PolicyKind::lfa);
  }
  plan.model_windows = false;
  apply_memory(config, plan).or_throw();
  CHECK(config.blocks[0].attention.retrieval.window == 0);
  CHECK(config.blocks[0].attention.kv.capacity == 50);
  // A window is at least one position; one past 2^31 is refused.
  CHECK_FALSE(MemorySetting::sliding_window(0, 4).ok());
  CHECK_FALSE(MemorySetting::sliding_window(0x7FFFFFFFu, 2).ok());
}

TEST_CASE("gemma2 fixture: llama.cpp's gemma2 graph from the file, the GPU equal to the dense forward at S = 1 and 4") {
  test::GgufTempDir dir;
  for (gguf::TensorType type : {gguf::TensorType::f32, gguf::TensorType::f16}) {
    auto [model, prompt] =
        open_fixture(test::write_fixture(dir.path, test::FixtureShape::for_type("gemma2", type), 51), "gemma2");
    for (uint32_t S : {1u, 4u}) {
      INFO(gguf::to_string(type) << " S = " << S);
      const StackConfig config = model.stack_config(test::unbounded(prompt.size(), S)).value_or_throw();
      CHECK(config.embedding_scale == 8.0);
      CHECK(config.logit_soft_cap == 30.0);
      CHECK(config.tied_embeddings);
      for (uint32_t l = 0; l < config.blocks.size(); ++l) {
        const BlockConfig& b = config.blocks[l];
        CHECK(b.post_norms);
        CHECK(b.activation == ActivationKind::gelu_tanh);
        CHECK(b.rope_layout == RopeLayout::neox);
        CHECK(b.attention.retrieval.soft_cap == 50.0);
        CHECK(b.attention.scale() == 0.25);  // 1 / sqrt(head_dim 16)
        CHECK(b.attention.retrieval.window == (l % 2 == 0 ? test::kGemmaWindow : 0u));
      }
      check_gpu_equals_dense(model, config, prompt);
    }
  }
  test::check_no_validation_messages(test::gpu());
}

TEST_CASE("gemma3 fixture: llama.cpp's gemma3 graph from the file, the GPU equal to the dense forward at S = 1 and 4") {
  test::GgufTempDir dir;
  for (gguf::TensorType type : {gguf::TensorType::f32, gguf::TensorType::f16}) {
    test::FixtureShape shape = test::FixtureShape::for_type("gemma3", type);
    shape.blocks = 7;  // five local blocks, a global one, then local again
    auto [model, prompt] = open_fixture(test::write_fixture(dir.path, shape, 53), "gemma3");
    for (uint32_t S : {1u, 4u}) {
      INFO(gguf::to_string(type) << " S = " << S);
      const StackConfig config = model.stack_config(test::unbounded(prompt.size(), S)).value_or_throw();
      CHECK(config.embedding_scale == 8.0);
      CHECK(config.logit_soft_cap == 0.0);  // no soft-caps in Gemma 3
      CHECK(config.tied_embeddings);
      for (uint32_t l = 0; l < config.blocks.size(); ++l) {
        INFO("block " << l);
        const BlockConfig& b = config.blocks[l];
        const bool global = l == 5;
        CHECK(b.post_norms);
        CHECK(b.qk_norm);
        CHECK(b.activation == ActivationKind::gelu_tanh);
        CHECK(b.rope_layout == RopeLayout::neox);
        CHECK(b.attention.shape.head_dim == 32);  // key_length, wider than hidden / heads
        CHECK(b.attention.retrieval.soft_cap == 0.0);
        CHECK(b.attention.scale() == 1.0f / std::sqrt(32.0f));  // 1 / sqrt(head_dim) below the 27B's 62 blocks
        CHECK(b.attention.retrieval.window == (global ? 0u : test::kGemmaWindow));
        CHECK(b.rope_theta == (global ? test::kGemma3RopeBase : test::kGemma3LocalRopeBase));
      }
      const std::vector<float> dense = check_gpu_equals_dense(model, config, prompt);
      // The local blocks' own base matters: with the global one they are another model.
      StackConfig one_base = config;
      for (BlockConfig& b : one_base.blocks) b.rope_theta = test::kGemma3RopeBase;
      CHECK(test::max_difference(test::dense_logits(model, one_base, prompt), dense) > 1e-3 * scale_of(dense));
    }
  }
  test::check_no_validation_messages(test::gpu());
}

TEST_CASE("gemma query scale: the 27B's block counts scale queries by 1/sqrt(hidden / heads), other files by 1/sqrt(head_dim)") {
  // llama.cpp's rule (query_pre_attn_scalar = hidden / heads in Gemma 2 and
  // 3 27B, the head dim elsewhere), chosen by the block count: 46 blocks for
  // gemma2, 62 for gemma3. The fixture's heads of 32 make the two differ
  // (hidden / heads = 16).
  test::GgufTempDir dir;
  for (const uint32_t blocks : {61u, 62u}) {
    test::FixtureShape shape = test::FixtureShape::for_type("gemma3", gguf::TensorType::f16);
    shape.blocks = blocks;
    shape.hidden = 64;
    shape.ffn = 32;
    const Model model = Model::open(test::write_fixture(dir.path, shape, 7)).value_or_throw();
    const StackConfig config = model.stack_config(model.default_memory()).value_or_throw();
    const float expected = blocks == 62 ? 0.25f : 1.0f / std::sqrt(32.0f);
    INFO(blocks << " blocks");
    for (const BlockConfig& b : config.blocks) {
      REQUIRE(b.attention.shape.head_dim == 32);
      CHECK(b.attention.retrieval.scale == expected);
      CHECK(b.attention.scale() == expected);
    }
  }
}
