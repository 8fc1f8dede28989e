// llama-perplexity's windowed perplexity and KL divergence
// (attendre/perplexity.hpp, PerplexityWindows): every setting reads the
// same windows, each from a fresh stack; a window's base runs first and
// keeps its scored rows for the others' KL divergence.
#include "run/token_scores.hpp"
#include "core/try.hpp"

#include <attendre/generate.hpp>
#include <attendre/perplexity.hpp>

#include <chrono>
#include <cmath>

namespace attendre {
namespace {

// One setting's sums over the windows read so far.
struct SettingSums {
  PerplexityResult result;
  uint64_t windows = 0;
  double nll = 0.0;
  std::vector<double> kl;  // one per scored token, with a KL base
  uint64_t same_top = 0;
};

// The scored rows of the base setting in the current window.
struct BaseRows {
  uint32_t vocab = 0;
  std::vector<float> logits;  // [scored][vocab]
  std::vector<double> lse;    // log_sum_exp of each row
  std::vector<uint32_t> top;  // top_token of each row
};

Status check_stack(const TransformerStack& stack, uint32_t vocab, size_t setting) {
  const StackConfig& c = stack.config();
  ATTENDRE_REQUIRE(c.vocab == vocab, "setting " + std::to_string(setting) + " has a vocabulary of " +
                                         std::to_string(c.vocab) + " tokens, the first " + std::to_string(vocab));
  for (size_t l = 0; l < c.blocks.size(); ++l)
    ATTENDRE_REQUIRE(c.blocks[l].attention.retrieval.causal,
                     "perplexity needs a causal stack: block " + std::to_string(l) + " lets queries see later positions");
  return {};
}

// Reads `window` through `stack` and hands each scored position's row
// (positions first .. ctx - 2) to `on_row` with its index among them; the
// steps before the first scored position skip the LM head.
Status score_window(TransformerStack& stack, std::span<const uint32_t> window, const PerplexityWindows& w,
                    const std::function<void(uint32_t index, std::span<const float> row)>& on_row) {
  const uint32_t vocab = stack.config().vocab;
  uint32_t seen = 0;
  ATTENDRE_TRY(read_tokens(stack, window, LogitsWanted::all, w.flush, [&](StackOutput&& out) {
for (size_t i = 0; i < out.positions.size(); ++i) {
  const int64_t p = out.positions[i];
  if (p < w.first_scored() || p + 1 >= static_cast<int64_t>(w.ctx)) continue;
  on_row(static_cast<uint32_t>(p - w.first_scored()), std::span<const float>(out.logits).subspan(i * vocab, vocab));
  ++seen;
}
}, w.first_scored()));
  ATTENDRE_REQUIRE(seen == w.scored_per_window(), "the stack emitted " + std::to_string(seen) + " of the window's " +
                                                       std::to_string(w.scored_per_window()) + " scored positions");
  return {};
}

}  // namespace

Status PerplexityWindows::check(uint64_t tokens) const {
  ATTENDRE_REQUIRE(ctx >= 3, "a window of " + std::to_string(ctx) +
                                 " tokens scores none (ctx - 1 - ctx/2 of them): ctx must be at least 3");
  ATTENDRE_REQUIRE(tokens >= 2 * static_cast<uint64_t>(ctx),
                   "the text is " + std::to_string(tokens) + " tokens: windows of " + std::to_string(ctx) +
                       " need at least " + std::to_string(2 * static_cast<uint64_t>(ctx)) + " (2 * ctx)");
  return {};
}

Result<std::vector<WindowedPerplexityResult>> windowed_perplexity(size_t settings, const StackMaker& make_stack,
                                                                  std::span<const uint32_t> tokens,
                                                                  const PerplexityWindows& w,
                                                                  const WindowProgress& progress) {
  ATTENDRE_TRY(w.check(tokens.size()));
  ATTENDRE_REQUIRE(settings > 0, "windowed perplexity needs at least one setting");
  ATTENDRE_REQUIRE(!w.kl_base || *w.kl_base < settings, "the KL base is setting " + std::to_string(w.kl_base.value_or(0)) +
                                                            " of " + std::to_string(settings));
  std::vector<size_t> order;  // the base first: the others' KL divergence needs its rows
  if (w.kl_base) order.push_back(*w.kl_base);
  for (size_t s = 0; s < settings; ++s)
    if (s != w.kl_base) order.push_back(s);

  const uint64_t windows = w.windows(tokens.size());
  std::vector<SettingSums> sums(settings);
  BaseRows base;
  std::vector<uint32_t> window(w.ctx);
  for (uint64_t k = 0; k < windows; ++k) {
    const auto text = tokens.subspan(k * w.ctx, w.ctx);
    window.assign(text.begin(), text.end());
    if (w.bos) window[0] = *w.bos;
    for (const size_t s : order) {
      ATTENDRE_TRY_ASSIGN(std::unique_ptr<TransformerStack> stack, make_stack(s));
      ATTENDRE_REQUIRE(stack != nullptr, "no stack was made for setting " + std::to_string(s));
      if (base.vocab == 0) base.vocab = stack->config().vocab;
      ATTENDRE_TRY(check_stack(*stack, base.vocab, s));
      const bool is_base = s == w.kl_base;
      if (is_base) {
        base.logits.resize(static_cast<size_t>(w.scored_per_window()) * base.vocab);
        base.lse.resize(w.scored_per_window());
        base.top.resize(w.scored_per_window());
      }
      SettingSums& sum = sums[s];
      const auto start = std::chrono::steady_clock::now();
      ATTENDRE_TRY(score_window(*stack, window, w, [&](uint32_t j, std::span<const float> row) {
        const double lse = scores::log_sum_exp(row);
        sum.nll += lse - row[window[w.first_scored() + j + 1]];
        if (!w.kl_base) return;
        const std::span<float> base_row = std::span<float>(base.logits).subspan(size_t{j} * base.vocab, base.vocab);
        if (is_base) {
          std::copy(row.begin(), row.end(), base_row.begin());
          base.lse[j] = lse;
          base.top[j] = scores::top_token(row);
        }
        sum.kl.push_back(scores::kl_divergence(base_row, base.lse[j], row, lse));
        sum.same_top += scores::top_token(row) == base.top[j] ? 1 : 0;
      }));
      stack.reset();
      sum.result.seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      sum.result.tokens += w.ctx;
      sum.result.predicted += w.scored_per_window();
      sum.result.mean_nll = sum.nll / static_cast<double>(sum.result.predicted);
      sum.result.perplexity = std::exp(sum.result.mean_nll);
      ++sum.windows;
      if (progress) progress(s, k, windows, sum.result);
    }
  }
  std::vector<WindowedPerplexityResult> results(settings);
  for (size_t s = 0; s < settings; ++s) {
    results[s].perplexity = sums[s].result;
    results[s].windows = sums[s].windows;
    if (w.kl_base) results[s].kl = scores::kl_statistics(std::move(sums[s].kl), sums[s].same_top);
  }
  return results;
}

}  // namespace attendre
