// The time-shifted stack (spec section 4) on the float64 reference and the
// GPU: the spec's invariants against a dense full-sequence forward, drain
// order and delay, flush against drain, decoding after reading.
#include "stack_support.hpp"
#include "support.hpp"

#include <attendre/reference_stack.hpp>

#include <doctest/doctest.h>

#include <cmath>

using namespace attendre;

namespace {

using StackFactory = std::function<std::unique_ptr<TransformerStack>(const StackConfig&, WeightSource&)>;

std::vector<std::pair<const char*, StackFactory>> stack_backends() {
  return {{"reference", [](const StackConfig& c, WeightSource& w) { return std::make_unique<reference::Stack>(c, w); }}};
}

void check_matches_dense(const StackConfig& config, const test::TokenStream& s, bool causal) {
  RandomWeights weights(5);
  StackChunk whole = s.chunk(0, s.rows());
  const StackOutput dense = reference::dense_forward(config, weights, whole, causal);
  for (auto& [name, make] : stack_backends()) {
    INFO(name);
    auto stack = make(config, weights);
    const auto got = test::run_stack(*stack, s);
    REQUIRE(got.size() == dense.positions.size());
    for (size_t i = 0; i < dense.positions.size(); ++i) {
      const test::Emitted& e = got.at(dense.positions[i]);
      for (uint32_t d = 0; d < config.hidden; ++d)
        CHECK(e.hidden[d] == doctest::Approx(dense.hidden[i * config.hidden + d]).epsilon(2e-4).scale(1.0));
    }
  }
}

}  // namespace

TEST_CASE("stack: N = 0, causal, fifo, M >= T, K = M is causal full attention (L = 1 and 3, MHA and GQA)") {
  const test::TokenStream s = test::random_tokens(29, 37, 21, 0.1);
  for (uint32_t layers : {1u, 3u})
    for (AttentionShape shape : {AttentionShape{2, 2, 8}, AttentionShape{4, 2, 6}}) {
      StackConfig c = test::small_stack(layers, shape, 5, 0, 32, 32, Policy::fifo());
      for (BlockConfig& b : c.blocks) b.attention.retrieval.causal = true;
      check_matches_dense(c, s, true);
    }
}

TEST_CASE("stack: every N >= T, M >= T, K = M is bidirectional full attention (L = 1 and 3, MHA and GQA)") {
  const test::TokenStream s = test::random_tokens(23, 37, 22, 0.1);
  for (uint32_t layers : {1u, 3u})
    for (AttentionShape shape : {AttentionShape{2, 2, 8}, AttentionShape{4, 2, 6}}) {
      StackConfig c = test::small_stack(layers, shape, 4, 23, 28, 28, Policy::lra_sum());
      c.blocks[0].attention.q_capacity = 30;  // N may differ per block
      check_matches_dense(c, s, false);
    }
}
