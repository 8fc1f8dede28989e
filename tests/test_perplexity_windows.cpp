// windowed_perplexity() (attendre/perplexity.hpp): llama-perplexity's
// windows against the dense forward written out window by window (tiny and
// odd windows too), its KL divergence statistics against the same
// statistics computed here from each window's logits, and each window read
// from an empty memory.
#include "no_device/gguf_test_support.hpp"
#include "model_checks.hpp"
#include "support.hpp"

#include "run/token_scores.hpp"

#include <attendre/generate.hpp>
#include <attendre/gpu_stack.hpp>
#include <attendre/model.hpp>
#include <attendre/perplexity.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>

using namespace attendre;

namespace {

const char* kStory =
    "Once upon a time, there was a little girl named Lily. She loved to play outside in the park. One day, she saw a "
    "big, red ball. She wanted to play with it, but it was too high. She asked her mom to help her. Her mom smiled and "
    "said, \"Of course, Lily!\" They played together all day long. Lily was very happy.";

// A fifo memory of 8 positions read in chunks of 4: it forgets within a window of 16 or more.
MemoryPlan bounded_fifo() {
  MemoryPlan plan;
  plan.chunk = 4;
  plan.all.kv.capacity = 8;
  return plan;
}

// Makes GPU stacks of `configs` and counts them.
struct GpuStacks {
  Model& model;
  std::vector<StackConfig> configs;
  size_t made = 0;
  StackMaker maker() {
    return [this](size_t s) -> Result<std::unique_ptr<TransformerStack>> {
      ++made;
      return std::unique_ptr<TransformerStack>(gpu::Stack::create(test::gpu(), configs.at(s), model.weights()).value_or_throw());
    };
  }
};

// The per-window mean NLL of setting `setting`, from the progress callback's running results.
std::vector<double> window_nlls(GpuStacks& stacks, size_t setting, std::span<const uint32_t> tokens,
                                const PerplexityWindows& w) {
  std::vector<double> nlls;
  double before = 0.0;
  windowed_perplexity(stacks.configs.size(), stacks.maker(), tokens, w,
                      [&](size_t s, uint64_t, uint64_t, const PerplexityResult& r) {
                        if (s != setting) return;
                        const double total = r.mean_nll * static_cast<double>(r.predicted);
                        nlls.push_back(total - before);
                        before = total;
                      }).value_or_throw();
  return nlls;
}

// Forwards to a stack, counting the output rows it was asked logits for
// (finish() runs the inner stack's own finish in one call).
class CountingStack final : public TransformerStack {
 public:
  CountingStack(std::unique_ptr<TransformerStack> inner, uint64_t& logit_rows)
      : inner_(std::move(inner)), logit_rows_(logit_rows) {}
  const StackConfig& config() const override { return inner_->config(); }
  Result<StackOutput> step(const StackChunk& chunk, const StackRequest& request) override {
    return counted(inner_->step(chunk, request), request);
  }
  Result<StackOutput> decode(const StackChunk& one, const StackRequest& request) override {
    return counted(inner_->decode(one, request), request);
  }
  bool has_pending() const override { return inner_->has_pending(); }
  Result<MemorySnapshot> snapshot(size_t block) override { return inner_->snapshot(block); }

 protected:
  Result<StackOutput> drain_step(const StackRequest& request) override { return counted(inner_->finish(request), request); }
  Result<StackOutput> flush_block(size_t, const StackRequest& request) override {
    return counted(inner_->finish(request, true), request);
  }
  void mark_finished() override {}

 private:
  Result<StackOutput> counted(Result<StackOutput> out, const StackRequest& request) {
    if (out.ok() && request.logits) logit_rows_ += out->positions.size();
    return out;
  }
  std::unique_ptr<TransformerStack> inner_;
  uint64_t& logit_rows_;
};

double percentile(const std::vector<double>& sorted, double fraction) {
  const double at = fraction * static_cast<double>(sorted.size() - 1);
  const auto i = static_cast<size_t>(at);
  return sorted[i] + (at - static_cast<double>(i)) * (sorted[std::min(i + 1, sorted.size() - 1)] - sorted[i]);
}

}  // namespace

TEST_CASE("windowed perplexity: llama-perplexity's windows equal the dense forward of each window, tiny and odd ones too") {
  const auto models = test::shared_models();
  if (!models) return;
  Model model = Model::open(*models / "stories260K.gguf").value_or_throw();
  const std::vector<uint32_t> tokens = model.tokenizer().encode(kStory).value_or_throw();
  REQUIRE(model.tokenizer().adds_bos());
  REQUIRE(tokens.size() >= 70);
  // adds_bos() says what encode() does: qwen2's vocabulary adds none.
  CHECK(tokens.front() == *model.tokenizer().bos());
  const Tokenizer qwen2 = Tokenizer::open(*models / "vocab" / "ggml-vocab-qwen2.gguf").value_or_throw();
  CHECK_FALSE(qwen2.adds_bos());
  CHECK(qwen2.encode("Once upon a time").value_or_throw() == qwen2.encode("Once upon a time", {false}).value_or_throw());
  for (const uint32_t ctx : {3u, 16u, 17u, static_cast<uint32_t>(tokens.size() / 2)}) {
    CAPTURE(ctx);
    PerplexityWindows w;
    w.ctx = ctx;
    w.bos = model.tokenizer().bos();
    GpuStacks stacks{model, {model.stack_config(test::unbounded(ctx, 4)).value_or_throw()}};
    const std::vector<WindowedPerplexityResult> r = windowed_perplexity(1, stacks.maker(), tokens, w).value_or_throw();
    const auto [expected, scored] = test::dense_windowed_perplexity(model, tokens, ctx, w.bos);
    const uint64_t windows = tokens.size() / ctx;
    CHECK(r[0].windows == windows);
    CHECK(stacks.made == windows);  // a fresh stack per window
    CHECK(r[0].perplexity.predicted == scored);
    CHECK(scored == windows * (ctx - 1 - ctx / 2));
    CHECK(r[0].perplexity.tokens == windows * ctx);
    CHECK(r[0].perplexity.perplexity == doctest::Approx(expected).epsilon(1e-5));
    CHECK(r[0].perplexity.mean_nll == doctest::Approx(std::log(expected)).epsilon(1e-5));
    CHECK_FALSE(r[0].kl.has_value());
  }
  // Without BOS in place of each window's first token the windows read other text.
  PerplexityWindows w;
  w.ctx = 16;
  GpuStacks stacks{model, {model.stack_config(test::unbounded(16, 4)).value_or_throw()}};
  const double plain = windowed_perplexity(1, stacks.maker(), tokens, w).value_or_throw()[0].perplexity.perplexity;
  CHECK(plain == doctest::Approx(test::dense_windowed_perplexity(model, tokens, 16, std::nullopt).first).epsilon(1e-5));
  CHECK(plain != doctest::Approx(test::dense_windowed_perplexity(model, tokens, 16, model.tokenizer().bos()).first).epsilon(1e-4));
}

TEST_CASE("windowed perplexity: KL divergence from the base, its median, 99th percentile and same top p as computed window by window") {
  const auto models = test::shared_models();
  if (!models) return;
  Model model = Model::open(*models / "stories260K.gguf").value_or_throw();
  const std::vector<uint32_t> tokens = model.tokenizer().encode(std::string(kStory) + " " + kStory).value_or_throw();
  for (const uint32_t ctx : {24u, 25u}) {  // an odd count of scored tokens (9 * 11), an even one (9 * 12)
    CAPTURE(ctx);
    PerplexityWindows w;
    w.ctx = ctx;
    w.bos = model.tokenizer().bos();
    w.kl_base = 1;  // the full context, second: the base runs first whatever its index
    GpuStacks stacks{model, {model.stack_config(bounded_fifo()).value_or_throw(), model.stack_config(test::unbounded(w.ctx, 4)).value_or_throw()}};
    const std::vector<WindowedPerplexityResult> r = windowed_perplexity(2, stacks.maker(), tokens, w).value_or_throw();
    REQUIRE(r[0].kl.has_value());
    REQUIRE(r[1].kl.has_value());

    // Here: each window through a fresh stack of each setting, KL(full || fifo) per scored token.
    const uint32_t vocab = stacks.configs[0].vocab, first = w.ctx / 2;
    std::vector<double> kl;
    uint64_t same_top = 0;
    double nll = 0.0;
    for (size_t start = 0; start + w.ctx <= tokens.size(); start += w.ctx) {
      std::vector<uint32_t> window(tokens.begin() + static_cast<ptrdiff_t>(start),
                                   tokens.begin() + static_cast<ptrdiff_t>(start + w.ctx));
      window[0] = *w.bos;
      auto fifo_owner = gpu::Stack::create(test::gpu(), stacks.configs[0], model.weights()).value_or_throw();
      gpu::Stack& fifo = *fifo_owner;
      auto full_owner = gpu::Stack::create(test::gpu(), stacks.configs[1], model.weights()).value_or_throw();
      gpu::Stack& full = *full_owner;
      const std::vector<float> q = test::stack_logits(fifo, window), p = test::stack_logits(full, window);
      for (uint32_t j = first; j + 1 < w.ctx; ++j) {
        const float* pj = p.data() + size_t{j} * vocab;
        const float* qj = q.data() + size_t{j} * vocab;
        double zp = 0.0, zq = 0.0;
        for (uint32_t v = 0; v < vocab; ++v) zp += std::exp(static_cast<double>(pj[v])), zq += std::exp(static_cast<double>(qj[v]));
        double sum = 0.0;
        for (uint32_t v = 0; v < vocab; ++v) {
          const double pv = std::exp(static_cast<double>(pj[v])) / zp;
          sum += pv * (std::log(pv) - (qj[v] - std::log(zq)));
        }
        kl.push_back(sum);
        same_top += std::max_element(pj, pj + vocab) - pj == std::max_element(qj, qj + vocab) - qj;
        nll += std::log(zq) - qj[tokens[start + j + 1]];
      }
    }
    const double n = static_cast<double>(kl.size());
    const KlDivergenceStats& s = *r[0].kl;
    CHECK(s.count == kl.size());
    CHECK(r[0].perplexity.mean_nll == doctest::Approx(nll / n).epsilon(1e-9));
    double mean = 0.0;
    for (const double v : kl) mean += v / n;
    std::sort(kl.begin(), kl.end());
    const size_t half = kl.size() / 2;
    CHECK(s.mean == doctest::Approx(mean).epsilon(1e-6));
    CHECK(s.median == doctest::Approx(kl.size() % 2 ? kl[half] : 0.5 * (kl[half - 1] + kl[half])).epsilon(1e-6));
    CHECK(s.p99 == doctest::Approx(percentile(kl, 0.99)).epsilon(1e-6));
    CHECK(s.p90 == doctest::Approx(percentile(kl, 0.90)).epsilon(1e-6));
    CHECK(s.maximum == doctest::Approx(kl.back()).epsilon(1e-6));
    CHECK(s.minimum == doctest::Approx(kl.front()).epsilon(1e-6));
    CHECK(s.same_top_p == doctest::Approx(static_cast<double>(same_top) / n));
    CHECK(s.mean > 1e-3);         // a memory of 8 in windows of 24 forgets
    CHECK(s.same_top_p < 1.0);
    // The base against itself.
    CHECK(r[1].kl->mean == 0.0);
    CHECK(r[1].kl->maximum == 0.0);
    CHECK(r[1].kl->same_top_p == 1.0);
  }
}

TEST_CASE("windowed perplexity: each window reads from an empty memory, whatever the windows before it held") {
  const auto models = test::shared_models();
  if (!models) return;
  Model model = Model::open(*models / "stories260K.gguf").value_or_throw();
  const std::vector<uint32_t> tokens = model.tokenizer().encode(kStory).value_or_throw();
  PerplexityWindows w;
  w.ctx = 20;
  w.bos = model.tokenizer().bos();
  std::vector<uint32_t> other = tokens;
  std::reverse(other.begin() + 1, other.begin() + w.ctx);  // another first window, the same later ones
  GpuStacks stacks{model, {model.stack_config(test::unbounded(w.ctx, 4)).value_or_throw(), model.stack_config(bounded_fifo()).value_or_throw()}};
  for (size_t setting = 0; setting < 2; ++setting) {
    CAPTURE(setting);
    const std::vector<double> a = window_nlls(stacks, setting, tokens, w), b = window_nlls(stacks, setting, other, w);
    REQUIRE(a.size() == tokens.size() / w.ctx);
    REQUIRE(b.size() == a.size());
    CHECK(a[0] != doctest::Approx(b[0]).epsilon(1e-3));
    for (size_t k = 1; k < a.size(); ++k) CHECK(a[k] == doctest::Approx(b[k]).epsilon(1e-12));
  }
}

TEST_CASE("windowed perplexity: the steps before a window's scored half skip the LM head, the values those of every row's logits") {
  const auto models = test::shared_models();
  if (!models) return;
  Model model = Model::open(*models / "stories260K.gguf").value_or_throw();
  const std::vector<uint32_t> tokens = model.tokenizer().encode(std::string(kStory) + " " + kStory).value_or_throw();
  for (const uint32_t ctx : {32u, 35u}) {  // the scored half starting on a step's first row, or inside a step
    CAPTURE(ctx);
    PerplexityWindows w;
    w.ctx = ctx;
    w.bos = model.tokenizer().bos();
    const StackConfig config = model.stack_config(test::unbounded(ctx, 4)).value_or_throw();
    uint64_t logit_rows = 0;
    const StackMaker counting = [&](size_t) -> Result<std::unique_ptr<TransformerStack>> {
      return std::unique_ptr<TransformerStack>(std::make_unique<CountingStack>(
          gpu::Stack::create(test::gpu(), config, model.weights()).value_or_throw(), logit_rows));
    };
    const WindowedPerplexityResult r = windowed_perplexity(1, counting, tokens, w).value_or_throw()[0];
    const uint64_t windows = tokens.size() / ctx;
    // Logits only from the step holding position ctx / 2 on (chunks of 4).
    CHECK(logit_rows == windows * (ctx - w.first_scored() / 4 * 4));

    // Every row's logits, each window through a fresh stack, scored here.
    double nll = 0.0;
    std::vector<uint32_t> window(ctx);
    for (uint64_t k = 0; k < windows; ++k) {
      std::copy_n(tokens.begin() + static_cast<ptrdiff_t>(k * ctx), ctx, window.begin());
      window[0] = *w.bos;
      std::unique_ptr<gpu::Stack> stack = gpu::Stack::create(test::gpu(), config, model.weights()).value_or_throw();
      uint32_t rows = 0;
      read_tokens(*stack, window, LogitsWanted::all, false, [&](StackOutput&& out) {
        REQUIRE(out.logits.size() == out.positions.size() * config.vocab);
        for (size_t i = 0; i < out.positions.size(); ++i, ++rows) {
          const int64_t p = out.positions[i];
          if (p < w.first_scored() || p + 1 >= ctx) continue;
          const auto row = std::span<const float>(out.logits).subspan(i * config.vocab, config.vocab);
          nll += scores::log_sum_exp(row) - row[window[p + 1]];
        }
      }).or_throw();
      CHECK(rows == ctx);
    }
    CHECK(r.perplexity.predicted == windows * w.scored_per_window());
    CHECK(r.perplexity.mean_nll == nll / static_cast<double>(r.perplexity.predicted));  // bit for bit
  }
}

TEST_CASE("windowed perplexity: too short a text, a window scoring nothing, a KL base out of range") {
  PerplexityWindows w;
  w.ctx = 512;
  CHECK(w.check(1023).message() == "the text is 1023 tokens: windows of 512 need at least 1024 (2 * ctx)");
  CHECK(w.check(1024).ok());
  CHECK(w.windows(1535) == 2);
  CHECK(w.first_scored() == 256);
  CHECK(w.scored_per_window() == 255);
  w.ctx = 2;
  CHECK(w.check(100).message() == "a window of 2 tokens scores none (ctx - 1 - ctx/2 of them): ctx must be at least 3");
  w.ctx = 7;
  CHECK(w.first_scored() == 3);
  CHECK(w.scored_per_window() == 3);
  const std::vector<uint32_t> tokens(20, 1);
  size_t made = 0;
  const StackMaker none = [&](size_t) -> Result<std::unique_ptr<TransformerStack>> {
    ++made;
    return invalid_argument("not made");
  };
  w.kl_base = 2;
  CHECK(windowed_perplexity(2, none, tokens, w).status().message() == "the KL base is setting 2 of 2");
  CHECK(windowed_perplexity(0, none, tokens, PerplexityWindows{7}).status().message() ==
    "windowed perplexity needs at least one setting");
  CHECK(windowed_perplexity(1, none, tokens, PerplexityWindows{7}).status().message() == "not made");
  CHECK(made == 1);
}
