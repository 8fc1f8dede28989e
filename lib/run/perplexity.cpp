#include "run/token_scores.hpp"
#include "core/try.hpp"

#include <attendre/generate.hpp>
#include <attendre/perplexity.hpp>

#include <chrono>
#include <cmath>

namespace attendre {

Result<PerplexityResult> perplexity(TransformerStack& stack, std::span<const uint32_t> tokens, bool flush,
                                    const PerplexityProgress& progress) {
  const StackConfig& c = stack.config();
  ATTENDRE_REQUIRE(tokens.size() >= 2, "perplexity needs at least 2 tokens, got " + std::to_string(tokens.size()));
  for (size_t l = 0; l < c.blocks.size(); ++l)
    ATTENDRE_REQUIRE(c.blocks[l].attention.retrieval.causal,
                     "perplexity needs a causal stack: block " + std::to_string(l) + " lets queries see later positions");
  PerplexityResult result;
  result.tokens = tokens.size();
  double nll = 0.0;
  const auto start = std::chrono::steady_clock::now();
  ATTENDRE_TRY(read_tokens(stack, tokens, LogitsWanted::all, flush, [&](StackOutput&& out) {
const uint64_t before = result.predicted;
for (size_t i = 0; i < out.positions.size(); ++i) {
  const auto t = static_cast<uint64_t>(out.positions[i]);
  if (t + 1 >= tokens.size()) continue;  // the last position predicts nothing in the text
  const std::span<const float> row = std::span<const float>(out.logits).subspan(i * c.vocab, c.vocab);
  nll += scores::log_sum_exp(row) - row[tokens[t + 1]];
  ++result.predicted;
}
if (progress && result.predicted > before)
  progress(result.predicted, tokens.size() - 1, std::exp(nll / static_cast<double>(result.predicted)));
}));
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  result.mean_nll = nll / static_cast<double>(result.predicted);
  result.perplexity = std::exp(result.mean_nll);
  return result;
}

}  // namespace attendre
