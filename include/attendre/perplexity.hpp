// Perplexity of a token sequence under a stack: the logits at position t
// predict token t + 1, so the stack must be causal (a query that saw the
// token it predicts would score a meaningless perplexity).
#pragma once

#include <attendre/stack.hpp>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <vector>

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
// and scores each next token in float64 (log-sum-exp over the row). Fails with
// invalid_argument when a block is not causal or fewer than 2 tokens are given.
Result<PerplexityResult> perplexity(TransformerStack& stack, std::span<const uint32_t> tokens, bool flush = false,
                                    const PerplexityProgress& progress = {});

// llama-perplexity's perplexity: the text (tokenized once) cut into
// tokens / ctx consecutive windows of ctx tokens (a shorter rest is
// dropped), each read on its own from an empty memory at positions 0 ..
// ctx - 1, its first token replaced by `bos` where set (where the
// vocabulary adds BOS); only the second half is scored: the logits at
// positions ctx/2 .. ctx - 2 predict the window's next tokens, ctx - 1 -
// ctx/2 per window, and the perplexity is exp of their mean NLL.
struct PerplexityWindows {
  uint32_t ctx = 512;
  std::optional<uint32_t> bos;  // the id replacing each window's first token
  bool flush = false;           // each window's read finishes by flushing (else draining)
  // The setting whose next-token distributions the KL divergence of every
  // setting is measured from (the full context); none: no KL statistics.
  std::optional<size_t> kl_base;

  uint64_t windows(uint64_t tokens) const { return tokens / ctx; }
  uint32_t first_scored() const { return ctx / 2; }           // the first position whose logits are scored
  uint32_t scored_per_window() const { return ctx - 1 - ctx / 2; }
  // invalid_argument naming the problem: ctx < 3 (no position scored),
  // fewer than 2 * ctx tokens (llama-perplexity's minimum).
  Status check(uint64_t tokens) const;
};

// llama-perplexity's KL divergence statistics (--kl-divergence) of one
// setting against the base over the scored tokens: per token KL(base ||
// setting) = sum_v p_base(v) (log p_base(v) - log p(v)), in float64 over the
// whole vocabulary (llama-perplexity rounds the base's log-probabilities to
// 16 bits and drops those below -16).
struct KlDivergenceStats {
  uint64_t count = 0;           // tokens scored
  double mean = 0.0;            // "Mean KLD"
  double mean_uncertainty = 0.0;  // its standard error (0 for 10 tokens or fewer, as llama-perplexity)
  // Sorted values; the median averages the middle two of an even count, a
  // percentile interpolates linearly at fraction * (count - 1).
  double median = 0.0, p90 = 0.0, p95 = 0.0, p99 = 0.0, p99_9 = 0.0, maximum = 0.0, minimum = 0.0;
  double same_top_p = 0.0;  // "Same top p": share of tokens whose most likely token (the smallest id on ties) is the base's
};

struct WindowedPerplexityResult {
  PerplexityResult perplexity;  // predicted: the scored tokens; tokens: the tokens read (windows * ctx)
  uint64_t windows = 0;
  std::optional<KlDivergenceStats> kl;  // with kl_base (the base's own: 0 and a same top p of 1)
};

// A stack of setting `setting`, fresh (its memories empty): one per window.
using StackMaker = std::function<Result<std::unique_ptr<TransformerStack>>(size_t setting)>;
// Called after each window of each setting, its stack released: the
// results so far (kl unset until the end).
using WindowProgress =
    std::function<void(size_t setting, uint64_t window, uint64_t windows, const PerplexityResult& so_far)>;

// Every setting (0 .. settings - 1) over the same windows of `tokens`,
// window by window; within a window the base runs first and its scored
// logits ((ctx - 1 - ctx/2) * vocab floats, the only ones kept) are
// released before the next window. `seconds` counts each setting's reads
// and scoring, not its stacks' creation. invalid_argument for check()'s
// failures, a stack that is not causal or whose vocabulary differs from
// the first's, kl_base out of range.
Result<std::vector<WindowedPerplexityResult>> windowed_perplexity(size_t settings, const StackMaker& make_stack,
                                                                  std::span<const uint32_t> tokens,
                                                                  const PerplexityWindows& windows,
                                                                  const WindowProgress& progress = {});

}  // namespace attendre
