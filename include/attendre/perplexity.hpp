// Perplexity of a token sequence under a stack: the logits at position t
// predict token t + 1, so the stack must be causal (a query that saw the
// token it predicts would score a meaningless perplexity).
#pragma once

#include <attendre/stack.hpp>

#include <cstdint>
#include <functional>
#include <span>

namespace attendre {

struct PerplexityResult {
  double perplexity = 0.0;   // exp(mean_nll)
  double mean_nll = 0.0;     // mean negative log-likelihood in nats per predicted token
  uint64_t predicted = 0;    // tokens scored: all but the first
  uint64_t tokens = 0;       // tokens read
  double seconds = 0.0;
  double tokens_per_s() const { return seconds > 0.0 ? static_cast<double>(tokens) / seconds : 0.0; }
};

// Called as outputs leave the stack: positions scored so far, of how many,
// and the perplexity over them.
using PerplexityProgress = std::function<void(uint64_t scored, uint64_t total, double perplexity)>;

// Streams `tokens` through `stack` (read_tokens, every position's logits)
// and scores each next token in float64 (log-sum-exp over the row). Throws
// invalid_argument when a block is not causal or fewer than 2 tokens are given.
Result<PerplexityResult> try_perplexity(TransformerStack& stack, std::span<const uint32_t> tokens, bool flush = false,
                                        const PerplexityProgress& progress = {});
#if defined(__cpp_exceptions)
inline PerplexityResult perplexity(TransformerStack& stack, std::span<const uint32_t> tokens, bool flush = false,
                                   const PerplexityProgress& progress = {}) {
  return try_perplexity(stack, tokens, flush, progress).value_or_throw();
}
#endif

}  // namespace attendre
