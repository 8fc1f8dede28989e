// score_stats.comp through kernels::InsertKernels: the initial score
// mu - k * sigma of the held, unpinned policy scores (spec 2.1, 2.4) against
// the float64 definition, for memories of one workgroup's span and of
// several (per-workgroup partials, then the combining pass), with subgroup
// reductions and with the shared-memory trees, on the device's limits and
// on tiny workgroups.
#include "kernel_harness.hpp"
#include "support.hpp"

#include "interface/constants.h"
#include "kernels/insert.hpp"
#include "kernels/kernel_plan.hpp"

#include <attendre/diagnostics.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <random>

using namespace attendre;

namespace {

enum class Scores { uniform, huge, clamped, zeros, ties };

const char* to_string(Scores s) {
  switch (s) {
    case Scores::uniform: return "uniform in [-3, 5]";
    case Scores::huge: return "magnitudes near 1e37";
    case Scores::clamped: return "some at -FLT_MAX";
    case Scores::zeros: return "all zero";
    case Scores::ties: return "four values";
  }
  return "";
}

float draw(Scores kind, std::mt19937_64& rng) {
  std::uniform_real_distribution<float> unit(0.0f, 1.0f);
  switch (kind) {
    case Scores::uniform: return -3.0f + 8.0f * unit(rng);
    case Scores::huge: return (unit(rng) - 0.3f) * 3e37f;
    case Scores::clamped: return unit(rng) < 0.1f ? -std::numeric_limits<float>::max() : unit(rng);
    case Scores::zeros: return 0.0f;
    case Scores::ties: return 0.25f * static_cast<float>(rng() % 4);
  }
  return 0.0f;
}

// The float64 definition, as reference::KeyValueMemory computes it.
double expected_init(const std::vector<float>& scores, const std::vector<int32_t>& positions, uint32_t n_sink,
                     double k) {
  double sum = 0.0;
  size_t n = 0;
  for (size_t i = 0; i < scores.size(); ++i)
    if (positions[i] >= static_cast<int32_t>(n_sink)) sum += scores[i], ++n;
  if (n == 0) return 0.0;
  const double mean = sum / static_cast<double>(n);
  double squares = 0.0;
  for (size_t i = 0; i < scores.size(); ++i)
    if (positions[i] >= static_cast<int32_t>(n_sink)) squares += (scores[i] - mean) * (scores[i] - mean);
  const double init = mean - k * std::sqrt(squares / static_cast<double>(n));
  const double float_max = std::numeric_limits<float>::max();
  return std::fmin(std::fmax(init, -float_max), float_max);
}

// Runs score_stats over `held` slots of a memory of `capacity` and checks
// the initial score word against the float64 definition.
// k, M and n_sink are specialization constants: a few values keep the
// pipelines cached.
void check_stats(Context& context, const kernels::KernelPlan& plan, uint32_t capacity, uint32_t held, uint32_t n_sink,
                 Scores kind, std::mt19937_64& rng) {
  const double ks[] = {0.5, 1.0, 1.75};
  const double k = ks[rng() % 3];
  std::vector<float> scores(held);
  std::vector<int32_t> positions(held);
  for (uint32_t s = 0; s < held; ++s) {
    scores[s] = draw(kind, rng);
    positions[s] = static_cast<int32_t>(rng() % (4 * capacity));
  }
  const uint32_t span = kernels::stats_span(plan, capacity);
  INFO("M " << capacity << ", held " << held << " (" << kernels::ceil_div(std::max(held, 1u), span)
            << " workgroups of " << span << " slots), n_sink " << n_sink << ", k " << k << ", scores "
            << to_string(kind) << ", subgroup reductions " << plan.subgroup_reductions << ", workgroup "
            << plan.workgroup);

  // K/V words: positions, then scores, each at an odd offset; the chunk's init word among noise.
  const uint32_t kv_pos = 3, kv_scores = kv_pos + capacity + 5;
  std::vector<uint32_t> kv(kv_scores + capacity + 2, 0x7FC00000u);  // NaN where nothing is held
  for (uint32_t s = 0; s < held; ++s) {
    kv[kv_pos + s] = static_cast<uint32_t>(positions[s]);
    kv[kv_scores + s] = test::float_bits(scores[s]);
  }
  const uint32_t chunk_init = 7;
  const std::vector<uint32_t> chunk(16, 0x0BADF00Du);
  const vk::Buffer kv_buffer = test::upload_words(context, kv, "test kv");
  const vk::Buffer chunk_buffer = test::upload_words(context, chunk, "test chunk");
  const vk::Buffer lists = test::device_words(context, std::max<uint64_t>(3, kernels::stats_partial_words(plan, capacity)),
                                              0x0BADF00Du, "test lists");
  kernels::InsertConstants constants{};
  constants.capacity = capacity;
  constants.rows = 1;
  constants.n_sink = n_sink;
  constants.policy = kernels::kPolicyLraSum;
  constants.init_k = static_cast<float>(k);
  constants.kv_pos_offset = kv_pos;
  constants.kv_score_offset = kv_scores;
  constants.chunk_init_offset = chunk_init;
  vk::DescriptorArena arena(context);
  const kernels::InsertKernels insert =
      kernels::InsertKernels::create(context, arena, plan, {{&kv_buffer}, {&chunk_buffer}, {&lists}, {}}, constants)
          .value_or_throw();
  test::run_once(context, [&](vk::CommandRecorder& rec) { insert.score_stats(rec, {held, 0}); });
  const std::vector<uint32_t> after = test::download_words(context, chunk_buffer, 0, chunk.size());

  const double expected = expected_init(scores, positions, n_sink, static_cast<double>(constants.init_k));
  const double got = test::bits_float(after[chunk_init]);
  // fp32 sums of scores scaled into [-1, 1]: errors of a few ulps of the
  // largest magnitude, times 1 + k for the sigma term.
  double largest = 0.0;
  for (float s : scores) largest = std::max(largest, std::abs(double{s}));
  const double tolerance = 1e-5 * largest * (1.0 + k);
  CHECK_MESSAGE(std::abs(got - expected) <= tolerance, "initial score " << got << ", expected " << expected);
  for (uint32_t i = 0; i < chunk.size(); ++i)
    if (i != chunk_init) CHECK_MESSAGE(after[i] == chunk[i], "score_stats wrote chunk word " << i);
}

void check_stats_sizes(Context& context) {
  std::mt19937_64 rng(20261124);
  kernels::KernelPlan plan = kernels::plan_kernels(context.caps());
  std::vector<bool> variants = {false};
  if (plan.subgroup_reductions) variants.push_back(true);
  for (bool subgroups : variants) {
    plan.subgroup_reductions = subgroups;
    const uint32_t W = plan.workgroup, span = kernels::stats_span(plan, 4 * W);
    // One span (below and at a workgroup), then several: a partial last workgroup, many workgroups.
    const uint32_t helds[] = {0, 1, W - 1, W + 3, span, span + 1, 3 * span + W / 2 + 7, 9 * span - 1};
    const uint32_t capacity = 9 * span + 8;
    for (uint32_t held : helds)
      for (Scores kind : {Scores::uniform, Scores::huge, Scores::clamped, Scores::zeros, Scores::ties})
        check_stats(context, plan, capacity, held, (held % 2 == 0) ? 0 : capacity, kind, rng);
  }
  test::check_no_validation_messages(context);
}

}  // namespace

TEST_CASE("score_stats: mu - k sigma over one or several workgroups matches float64 (device limits)") {
  check_stats_sizes(test::gpu());
}

TEST_CASE("score_stats: mu - k sigma over one or several workgroups matches float64 (tiny workgroups)") {
  check_stats_sizes(test::tiny_gpu());
}

TEST_CASE("score_stats: a memory too large for one workgroup per span widens the span, not the dispatch") {
  kernels::KernelPlan plan = kernels::plan_kernels(test::gpu().caps());
  plan.max_groups_x = 16;
  const uint32_t span = kernels::stats_span(plan, 100000);
  CHECK(span % plan.workgroup == 0);
  CHECK(kernels::ceil_div(100000, span) <= plan.max_groups_x);
  CHECK(kernels::stats_span(plan, 100) == kernels::stats_span(plan, 1000));  // small memories: the base span
  CHECK(kernels::stats_partial_words(plan, 100) == 1);                      // one workgroup: no partials
  CHECK(kernels::stats_partial_words(plan, 100000) == 4ull * kernels::ceil_div(100000, span));
  std::mt19937_64 rng(7);
  check_stats(test::gpu(), plan, 100000, 100000 - 3, 0, Scores::uniform, rng);
  test::check_no_validation_messages(test::gpu());
}

TEST_CASE("kernel variants: reductions name subgroup arithmetic when present, the trees when switched off") {
  auto reductions = [](const Context& context) {
    for (const KernelVariant& v : kernel_variants(context))
      if (v.family == "reductions, scans") return v;
    FAIL("no reductions line");
    return KernelVariant{};
  };
  const KernelVariant on = reductions(test::gpu());
  if (test::gpu().caps().subgroup_arithmetic) {
    CHECK(on.variant.find("subgroup arithmetic") != std::string::npos);
    CHECK(kernels::plan_kernels(test::gpu().caps()).subgroup_reductions);
  } else {
    CHECK(on.variant.find("shared-memory trees") != std::string::npos);
  }
  ContextOptions options;
  options.disabled_features = FeatureSet{}.add(Feature::subgroup_arithmetic);
  auto off_owner = Context::create(options).value_or_throw();
  Context& off = *off_owner;
  CHECK_FALSE(kernels::plan_kernels(off.caps()).subgroup_reductions);
  const KernelVariant fallback = reductions(off);
  CHECK(fallback.variant.find("shared-memory trees (score_stats") != std::string::npos);
  CHECK(fallback.reason.rfind("arithmetic switched off", 0) == 0);
  // The fallback computes the same initial score.
  std::mt19937_64 rng(99);
  const kernels::KernelPlan plan = kernels::plan_kernels(off.caps());
  const uint32_t span = kernels::stats_span(plan, 1u << 14);
  check_stats(off, plan, 1u << 14, 2 * span + 5, 0, Scores::uniform, rng);
  test::check_no_validation_messages(off);
}
