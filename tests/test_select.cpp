// The bitonic selection kernels in isolation (select_tile.comp, both
// variants, + select_merge.comp through kernels::Select), checked against
// std::partial_sort on randomized rows: sizes that cross workgroup, tile and
// merge-round boundaries, logits full of exact ties, masked (-inf) entries,
// rows with fewer candidates than K, and eviction candidates with pinned
// slots, invalid rows and int or float policy scores.
#include "kernel_harness.hpp"
#include "support.hpp"

#include "kernels/kernel_plan.hpp"
#include "interface/constants.h"
#include "kernels/select.hpp"

#include <attendre/diagnostics.hpp>
#include <attendre/error.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <limits>
#include <numeric>
#include <random>
#include <sstream>

using namespace attendre;
using test::ListEntry;

namespace {

constexpr uint32_t kInvalid = kernels::kInvalid;
constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// "" when equal, else the first differing entry.
std::string first_mismatch(const std::vector<ListEntry>& expected, const std::vector<ListEntry>& actual) {
  if (expected.size() != actual.size()) return "sizes differ";
  for (size_t i = 0; i < expected.size(); ++i) {
    if (expected[i] == actual[i]) continue;
    std::ostringstream s;
    s << std::hex << "entry " << std::dec << i << std::hex << ": expected (key 0x" << expected[i].key << ", tie 0x"
      << expected[i].tie << ", payload 0x" << expected[i].payload << "), got (key 0x" << actual[i].key << ", tie 0x"
      << actual[i].tie << ", payload 0x" << actual[i].payload << ")";
    return s.str();
  }
  return "";
}

// Powers of two a select on this plan accepts, from the requested K values.
std::vector<uint32_t> keeps_for(const kernels::KernelPlan& plan, const std::vector<uint32_t>& ks) {
  std::vector<uint32_t> keeps;
  for (uint32_t k : ks) {
    const uint32_t keep = std::min(kernels::next_pow2(k), plan.max_keep());
    if (std::find(keeps.begin(), keeps.end(), keep) == keeps.end()) keeps.push_back(keep);
  }
  return keeps;
}

// Rows whose expected answer changes when score ties break the wrong way:
// the inputs are sensitive to the tie order, so a kernel that broke ties
// by the larger position would fail the comparison.
struct Sensitivity {
  uint32_t tie_sensitive = 0;
  void note(const std::vector<ListEntry>& expected, const std::vector<ListEntry>& wrong,
            const std::vector<ListEntry>& actual) {
    if (wrong == expected) return;
    ++tie_sensitive;
    CHECK_MESSAGE(!first_mismatch(wrong, actual).empty(), "the comparison must reject the reversed tie order");
  }
};

// ---------------------------------------------------------------------------
// SOURCE_LOGITS: top-K of each row, larger logit first, then smaller position.

enum class Fill {
  ties,          // 7 values (-inf, -0 and +0 included): exact ties everywhere
  coarse,        // {-inf, 0, 1}: long runs of ties across tiles
  continuous,    // normal, 10% masked
  few_unmasked,  // fewer unmasked entries than keep (possibly none)
  descending,    // distinct logits falling with the slot: the best are the first slots, spread evenly
                 // over the direct select's invocations (its threshold has no slack)
};

std::vector<float> fill_row(Fill fill, uint32_t count, uint32_t keep, std::mt19937_64& rng) {
  std::vector<float> row(count, kNegInf);
  std::normal_distribution<float> normal(0.0f, 3.0f);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  switch (fill) {
    case Fill::ties: {
      const float values[] = {kNegInf, -2.0f, -0.5f, -0.0f, 0.0f, 0.5f, 3.0f};
      std::uniform_int_distribution<int> pick(0, 6);
      for (float& x : row) x = values[pick(rng)];
      break;
    }
    case Fill::coarse: {
      const float values[] = {kNegInf, 0.0f, 1.0f};
      std::uniform_int_distribution<int> pick(0, 2);
      for (float& x : row) x = values[pick(rng)];
      break;
    }
    case Fill::continuous:
      for (float& x : row) x = unit(rng) < 0.1 ? kNegInf : normal(rng);
      break;
    case Fill::descending:
      for (uint32_t i = 0; i < count; ++i) row[i] = 1000.0f - 0.25f * static_cast<float>(i);
      break;
    case Fill::few_unmasked: {
      const uint32_t unmasked = std::min<uint32_t>(count, static_cast<uint32_t>(rng() % keep));  // < keep
      for (uint32_t i = 0; i < unmasked; ++i) row[rng() % count] = normal(rng);
      break;
    }
  }
  return row;
}

// Expected tile-0 list of one row: std::partial_sort of the slots by
// (logit descending, position ascending), padded with empty entries.
std::vector<ListEntry> expected_top(const std::vector<float>& logits, const std::vector<int32_t>& positions,
                                    uint32_t keep, bool reversed_ties = false) {
  std::vector<uint32_t> slots(logits.size());
  std::iota(slots.begin(), slots.end(), 0u);
  auto before = [&](uint32_t a, uint32_t b) {
    if (logits[a] != logits[b]) return logits[a] > logits[b];  // -inf == -inf, -0 == +0
    if (positions[a] != positions[b]) return reversed_ties ? positions[a] > positions[b] : positions[a] < positions[b];
    return a < b;  // equal positions (only the direct select's test makes them): the smaller slot
  };
  const size_t n = std::min<size_t>(keep, slots.size());
  std::partial_sort(slots.begin(), slots.begin() + static_cast<std::ptrdiff_t>(n), slots.end(), before);
  std::vector<ListEntry> out(keep);
  for (size_t i = 0; i < n; ++i)
    out[i] = {~test::ordered_float(logits[slots[i]]), test::ordered_int(positions[slots[i]]), slots[i]};
  return out;
}

// One dispatch of `fills.size()` rows of `count` logits each, keeping `keep`.
void check_top_k(Context& context, vk::DescriptorArena& arena, uint32_t count, uint32_t keep,
                 const std::vector<Fill>& fills, std::mt19937_64& rng, Sensitivity& sensitivity,
                 bool equal_positions = false) {
  const kernels::KernelPlan plan = kernels::plan_kernels(context.caps());
  const uint32_t rows = static_cast<uint32_t>(fills.size());
  INFO("count " << count << ", keep " << keep << ", rows " << rows << ", tile " << plan.select_tile
                 << (equal_positions ? ", equal positions" : ""));

  // Distinct positions (negative ones included), shuffled over the slots.
  std::vector<int32_t> positions(count);
  const int32_t first = -static_cast<int32_t>(count / 3);
  // equal_positions: runs of three slots share a position.
  for (uint32_t i = 0; i < count; ++i) positions[i] = first + 2 * static_cast<int32_t>(equal_positions ? i / 3 : i);
  std::shuffle(positions.begin(), positions.end(), rng);

  // Offsets and a row stride that differ from the naive layout; every word
  // the kernel must not read holds +inf (it would win any top-K).
  const uint32_t kv_pos_offset = 7, source_offset = 3, source_stride = count + 5;
  std::vector<uint32_t> kv(kv_pos_offset + count + 9, 0x12345678u);
  for (uint32_t i = 0; i < count; ++i) kv[kv_pos_offset + i] = static_cast<uint32_t>(positions[i]);
  std::vector<uint32_t> logit_words(source_offset + uint64_t{rows} * source_stride + 11,
                                    test::float_bits(std::numeric_limits<float>::infinity()));
  std::vector<std::vector<float>> logits;
  for (uint32_t r = 0; r < rows; ++r) {
    logits.push_back(fill_row(fills[r], count, keep, rng));
    for (uint32_t i = 0; i < count; ++i)
      logit_words[source_offset + uint64_t{r} * source_stride + i] = test::float_bits(logits[r][i]);
  }

  const vk::Buffer kv_buffer = test::upload_words(context, kv, "test kv");
  const vk::Buffer logit_buffer = test::upload_words(context, logit_words, "test logits");
  const uint32_t tiles = kernels::ceil_div(count, plan.select_span());
  const uint64_t list_words = uint64_t{rows} * tiles * keep * 3;
  const vk::Buffer lists = test::device_words(context, list_words, 0xDEADBEEFu, "test lists");
  const kernels::Select select = kernels::Select::create(context, arena, plan, kernels::Select::Source::logits,
                                                         {&logit_buffer}, {&kv_buffer}, {&lists})
                                     .value_or_throw();

  kernels::SelectTileParams p{};
  p.count = count;
  p.keep = keep;
  p.source_offset = source_offset;
  p.source_stride = source_stride;
  p.kv_pos_offset = kv_pos_offset;
  test::run_once(context, [&](vk::CommandRecorder& rec) { select.record(rec, p, rows).or_throw(); });
  REQUIRE(select.list_words(rows, count, keep) == list_words);
  const std::vector<uint32_t> words = test::download_words(context, lists, 0, list_words);

  for (uint32_t r = 0; r < rows; ++r) {
    INFO("row " << r << " (fill " << static_cast<int>(fills[r]) << ")");
    const std::vector<ListEntry> actual = test::list_row(words, r, tiles, keep);
    const std::vector<ListEntry> expected = expected_top(logits[r], positions, keep);
    const std::string mismatch = first_mismatch(expected, actual);
    CHECK_MESSAGE(mismatch.empty(), mismatch);
    sensitivity.note(expected, expected_top(logits[r], positions, keep, true), actual);
  }
}

void check_top_k_sizes(Context& context) {
  const kernels::KernelPlan plan = kernels::plan_kernels(context.caps());
  vk::DescriptorArena arena(context);
  std::mt19937_64 rng(20240601 + plan.select_tile);
  Sensitivity sensitivity;
  const std::vector<Fill> all = {Fill::ties, Fill::continuous, Fill::few_unmasked, Fill::coarse};
  for (uint32_t count : {1u, 2u, 255u, 256u, 257u, 4096u})
    for (uint32_t keep : keeps_for(plan, {1, 3, 32, plan.max_keep()})) check_top_k(context, arena, count, keep, all, rng, sensitivity);
  // 65537 = one past a power of two: 1025 tiles of 64 on tiny_gpu(). With
  // keep = 4 the merge takes 15 lists a round (69 rounds); one row per fill
  // keeps it quick on a CPU driver. keep = max_keep: see the merge test below.
  check_top_k(context, arena, 65537, 4, {Fill::ties, Fill::continuous}, rng, sensitivity);
  if (plan.select_tile >= 2048)  // a few dozen tiles: a handful of merge rounds
    check_top_k(context, arena, 65537, plan.max_keep(), {Fill::ties}, rng, sensitivity);
  CHECK(sensitivity.tie_sensitive > 0);
  test::check_no_validation_messages(context);
}

// ---------------------------------------------------------------------------
// SOURCE_EVICT: the `keep` smallest (score, position) eligible candidates.

enum class Scores {
  small_ints,    // 0..4: ties everywhere (lfu counts, coarse lru)
  wide_ints,     // full int32 range, both signs
  float_ties,    // {-1, -0, +0, 0.25, 2}; new rows start at 0.25 (ties with held)
  float_normal,  // continuous
};

struct EvictCase {
  uint32_t held, rows, new_rows, n_sink;
  std::vector<uint32_t> ks;  // requested K values (rounded up to powers of two)
};

void check_victims(Context& context, vk::DescriptorArena& arena, const EvictCase& c, uint32_t policy, Scores scores,
                   std::mt19937_64& rng, Sensitivity& sensitivity) {
  const kernels::KernelPlan plan = kernels::plan_kernels(context.caps());
  test::EvictInputs in;
  in.n_sink = c.n_sink;
  in.new_rows = c.new_rows;
  in.policy = policy;
  in.int_scores = scores == Scores::small_ints || scores == Scores::wide_ints;
  in.init_bits = test::float_bits(scores == Scores::float_ties ? 0.25f : -0.75f);

  // Distinct positions; chunk rows ascending like a real chunk, but drawn
  // from the same pool so that some are pinned and some precede held ones.
  std::vector<int32_t> pool(2 * (c.held + c.rows) + 8);
  std::iota(pool.begin(), pool.end(), 0);
  std::shuffle(pool.begin(), pool.end(), rng);
  in.held_positions.assign(pool.begin(), pool.begin() + c.held);
  in.row_positions.assign(pool.begin() + c.held, pool.begin() + c.held + c.rows);
  std::sort(in.row_positions.begin(), in.row_positions.end());
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  for (uint32_t r = 0; r < c.rows; ++r) in.row_valid.push_back(unit(rng) < 0.85 ? 1 : 0);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (uint32_t i = 0; i < c.held; ++i) {
    switch (scores) {
      case Scores::small_ints: in.held_scores.push_back(static_cast<uint32_t>(rng() % 5)); break;
      case Scores::wide_ints: in.held_scores.push_back(static_cast<uint32_t>(rng())); break;
      case Scores::float_ties: {
        const float values[] = {-1.0f, -0.0f, 0.0f, 0.25f, 2.0f};
        in.held_scores.push_back(test::float_bits(values[rng() % 5]));
        break;
      }
      case Scores::float_normal: in.held_scores.push_back(test::float_bits(normal(rng))); break;
    }
  }

  // K/V memory: positions and scores at odd word offsets; chunk: positions,
  // valid flags and the initial-score word.
  const uint32_t pos_off = 5, score_off = pos_off + c.held + 3;
  std::vector<uint32_t> kv(score_off + c.held + 4, 0xCAFEF00Du);
  for (uint32_t i = 0; i < c.held; ++i) {
    kv[pos_off + i] = static_cast<uint32_t>(in.held_positions[i]);
    kv[score_off + i] = in.held_scores[i];
  }
  const uint32_t cpos_off = 2, cvalid_off = cpos_off + c.rows + 1, cinit_off = cvalid_off + c.rows + 2;
  std::vector<uint32_t> chunk(cinit_off + 3, 0xCAFEF00Du);
  for (uint32_t r = 0; r < c.rows; ++r) {
    chunk[cpos_off + r] = static_cast<uint32_t>(in.row_positions[r]);
    chunk[cvalid_off + r] = in.row_valid[r];
  }
  chunk[cinit_off] = in.init_bits;

  const uint32_t count = c.held + c.new_rows;
  const vk::Buffer kv_buffer = test::upload_words(context, kv, "test kv");
  const vk::Buffer chunk_buffer = test::upload_words(context, chunk, "test chunk");
  for (uint32_t keep : keeps_for(plan, c.ks)) {
    INFO("held " << c.held << ", new rows " << c.new_rows << " of " << c.rows << ", n_sink " << c.n_sink << ", keep "
                 << keep << ", policy " << policy << ", scores " << static_cast<int>(scores) << ", tile "
                 << plan.select_tile);
    const uint64_t list_words = uint64_t{std::max(1u, (count + plan.select_span() - 1) / plan.select_span())} * keep * 3;
    const vk::Buffer lists = test::device_words(context, list_words, 0xDEADBEEFu, "test lists");
    const kernels::Select select = kernels::Select::create(context, arena, plan, kernels::Select::Source::evict,
                                                           {&kv_buffer}, {&chunk_buffer}, {&lists})
                                       .value_or_throw();
    kernels::SelectTileParams p{};
    p.count = count;
    p.keep = keep;
    p.kv_pos_offset = pos_off;
    p.held = c.held;
    p.n_sink = c.n_sink;
    p.new_rows = c.new_rows;
    p.int_scores = in.int_scores ? 1u : 0u;
    p.policy = policy;
    p.kv_score_offset = score_off;
    p.chunk_pos_offset = cpos_off;
    p.chunk_valid_offset = cvalid_off;
    p.chunk_init_offset = cinit_off;
    test::run_once(context, [&](vk::CommandRecorder& rec) { select.record(rec, p, 1).or_throw(); });
    const std::vector<uint32_t> words = test::download_words(context, lists, 0, uint64_t{keep} * 3);
    const std::vector<ListEntry> actual = test::list_row(words, 0, 1, keep);
    const std::vector<ListEntry> expected = test::expected_victims(in, keep);
    const std::string mismatch = first_mismatch(expected, actual);
    CHECK_MESSAGE(mismatch.empty(), mismatch);
    sensitivity.note(expected, test::expected_victims(in, keep, true), actual);
  }
}

void check_victim_sizes(Context& context) {
  const kernels::KernelPlan plan = kernels::plan_kernels(context.caps());
  vk::DescriptorArena arena(context);
  std::mt19937_64 rng(777 + plan.select_tile);
  Sensitivity sensitivity;
  const uint32_t mk = plan.max_keep();
  const EvictCase cases[] = {
      {1, 0, 0, 0, {1, 2}},                  // one candidate
      {2, 3, 0, 0, {1, 3}},                  // protect_new: chunk rows never compete
      {0, 2, 2, 0, {1, 2}},                  // nothing held: only new rows
      {255, 1, 1, 4, {1, 3, 32}},            // 256 candidates
      {256, 1, 1, 4, {1, 32, mk}},           // 257: one past a tile / workgroup multiple
      {200, 57, 57, 0, {3, 32}},             // 257 with many new rows
      {3, 254, 254, 0, {32, mk}},            // mostly new rows
      {60, 70, 70, 100, {32, mk}},           // pinned held and new entries: fewer eligible than keep
      {40, 5, 5, 1000, {4}},                 // everything pinned: only empty entries
      {4000, 96, 96, 4, {1, 32, mk}},        // 4096
      {4096, 0, 0, 4, {3}},                  // 4096 held, protect_new
  };
  struct Mix {
    uint32_t policy;
    Scores scores;
  };
  const Mix mixes[] = {
      {kernels::kPolicyFifo, Scores::wide_ints},  {kernels::kPolicyLru, Scores::small_ints},
      {kernels::kPolicyLfu, Scores::small_ints},  {kernels::kPolicyLraLast, Scores::float_ties},
      {kernels::kPolicyLfa, Scores::float_normal}, {kernels::kPolicyLraSum, Scores::float_ties},
  };
  for (const EvictCase& c : cases)
    for (const Mix& m : mixes) check_victims(context, arena, c, m.policy, m.scores, rng, sensitivity);
  // 65537 candidates (1025 tiles of 64 on tiny_gpu()).
  check_victims(context, arena, {65000, 537, 537, 4, {3}}, kernels::kPolicyLraMax, Scores::float_ties, rng,
                sensitivity);
  CHECK(sensitivity.tie_sensitive > 0);
  test::check_no_validation_messages(context);
}

}  // namespace

TEST_CASE("select top-K matches std::partial_sort (device limits)") { check_top_k_sizes(test::gpu()); }

TEST_CASE("select top-K matches std::partial_sort (tiny tiles, multi-round merges)") {
  check_top_k_sizes(test::tiny_gpu());
}

TEST_CASE("select eviction victims match std::partial_sort (device limits)") { check_victim_sizes(test::gpu()); }

TEST_CASE("select eviction victims match std::partial_sort (tiny tiles, multi-round merges)") {
  check_victim_sizes(test::tiny_gpu());
}

// The merge folds all tile lists of a row in one workgroup, TILE / keep - 1
// lists a round, each round a full bitonic sort: with keep = TILE / 2 that is
// one round per tile, 1024 rounds for 65537 candidates on tiny_gpu() (1025
// tiles of 64, keep 32). These fail on lavapipe: its shader compiler stops
// every loop of an invocation after 65535 iterations in total (gallivm's
// LP_MAX_TGSI_LOOP_ITERATIONS, shared by all loops), so select_merge.comp
// silently leaves its round loop after about 607 rounds here and the later
// tiles are never merged. Bounding the work of one invocation (a tree of
// merge passes, each workgroup folding at most TILE / keep lists) fixes it.
TEST_CASE("select merge of a thousand tiles keeping max_keep (tiny tiles, 65537 candidates)") {
  Context& context = test::tiny_gpu();
  const kernels::KernelPlan plan = kernels::plan_kernels(context.caps());
  vk::DescriptorArena arena(context);
  std::mt19937_64 rng(65537);
  Sensitivity sensitivity;
  check_top_k(context, arena, 65537, plan.max_keep(), {Fill::ties}, rng, sensitivity);
  check_top_k(context, arena, 65537, plan.max_keep(), {Fill::continuous}, rng, sensitivity);
  check_victims(context, arena, {65000, 537, 537, 4, {plan.max_keep()}}, kernels::kPolicyLru, Scores::small_ints, rng,
                sensitivity);
  test::check_no_validation_messages(context);
}

// The same at the device's own limits: 100 tiles keeping max_keep (on
// lavapipe: 204800 candidates, keep 1024, 99 merge rounds), a long-context
// memory's top-K with K = max_keep.
TEST_CASE("select merge of 100 tiles keeping max_keep (device limits)") {
  Context& context = test::gpu();
  const kernels::KernelPlan plan = kernels::plan_kernels(context.caps());
  vk::DescriptorArena arena(context);
  std::mt19937_64 rng(100);
  Sensitivity sensitivity;
  check_top_k(context, arena, 100 * plan.select_tile, plan.max_keep(), {Fill::continuous}, rng, sensitivity);
  test::check_no_validation_messages(context);
}

TEST_CASE("select rejects a keep that is not a power of two or exceeds half a tile") {
  Context& context = test::tiny_gpu();
  const kernels::KernelPlan plan = kernels::plan_kernels(context.caps());
  vk::DescriptorArena arena(context);
  const vk::Buffer logits = test::device_words(context, 1024, 0u, "test logits");
  const vk::Buffer kv = test::device_words(context, 1024, 0u, "test kv");
  const vk::Buffer lists = test::device_words(context, 1024, 0u, "test lists");
  const kernels::Select select =
      kernels::Select::create(context, arena, plan, kernels::Select::Source::logits, {&logits}, {&kv}, {&lists})
          .value_or_throw();
  vk::Submission submission = vk::Submission::create(context).value_or_throw();
  vk::CommandRecorder& rec = *submission.begin().value_or_throw();
  kernels::SelectTileParams p{};
  p.count = 10;
  for (uint32_t keep : {0u, 3u, plan.max_keep() * 2}) {
    p.keep = keep;
    const Status refused = select.record(rec, p, 1);
    CHECK(refused.code() == ErrorCode::invalid_argument);
  }
  test::check_no_validation_messages(context);
}

// The tiled select in both builds on any device (lavapipe defaults to the
// direct kernels): bitonic stages within a subgroup through
// subgroupShuffleXor where shuffles and full subgroups are present, and
// the shared-memory stages with `shuffle` switched off. Sizes cross
// subgroups, workgroups, tiles and merge rounds; ties decide membership.
TEST_CASE("select (tiled): subgroup shuffle stages and shared-memory stages both match std::partial_sort") {
  for (bool tiny : {false, true})
    for (bool shuffle : {true, false}) {
      ContextOptions options;
      options.kernels = DeviceCaps::KernelStyle::tiled;
      if (tiny) options.limits = LimitOverrides{32u, 1536u, std::nullopt};  // 64-entry tiles, 32 invocations
      if (!shuffle) options.disabled_features = FeatureSet{}.add(Feature::subgroup_shuffle);
      auto context_owner = Context::create(options).value_or_throw();
      Context& context = *context_owner;
      const kernels::KernelPlan plan = kernels::plan_kernels(context.caps());
      INFO((tiny ? "tiny limits" : "device limits") << ", shuffle " << (shuffle ? "on" : "switched off")
                                                    << ", subgroup size " << context.caps().subgroup_size);
      vk::DescriptorArena arena(context);
      const vk::Buffer logits = test::device_words(context, 64, 0u, "probe logits");
      const vk::Buffer kv = test::device_words(context, 64, 0u, "probe kv");
      const vk::Buffer lists = test::device_words(context, 64, 0u, "probe lists");
      const kernels::Select probe =
          kernels::Select::create(context, arena, plan, kernels::Select::Source::logits, {&logits}, {&kv}, {&lists})
              .value_or_throw();
      if (!shuffle) CHECK_FALSE(probe.shuffles());
      if (shuffle && context.caps().subgroup_shuffle && context.caps().subgroup_size_control &&
          plan.select_workgroup % context.caps().max_subgroup_size == 0)
        CHECK(probe.shuffles());
      // The variant report names what runs, and why the fallback does.
      for (const KernelVariant& v : kernel_variants(context)) {
        if (v.family != "select (tiled)") continue;
        INFO(v.variant << " (" << v.reason << ")");
        CHECK((v.variant.find("subgroupShuffleXor") != std::string::npos) == probe.shuffles());
        if (!shuffle) CHECK(v.reason.find("shuffle switched off") != std::string::npos);
      }
      std::mt19937_64 rng(4099 + (tiny ? 1 : 0));
      Sensitivity sensitivity;
      const std::vector<Fill> all = {Fill::ties, Fill::continuous, Fill::few_unmasked, Fill::coarse};
      for (uint32_t count : {7u, 257u, 3 * plan.select_tile + 5})
        for (uint32_t keep : keeps_for(plan, {1, 2, 8, 32, plan.max_keep()}))
          check_top_k(context, arena, count, keep, all, rng, sensitivity);
      const uint32_t mk = plan.max_keep();
      for (const EvictCase& c : {EvictCase{255, 1, 1, 4, {1, 3, 32}}, EvictCase{60, 70, 70, 100, {32, mk}},
                                 EvictCase{2 * plan.select_tile, 96, 96, 4, {4, mk}}})
        check_victims(context, arena, c, kernels::kPolicyLfu, Scores::small_ints, rng, sensitivity);
      CHECK(sensitivity.tie_sensitive > 0);
      test::check_no_validation_messages(context);
    }
}

// The direct select (CPU devices, lavapipe's default) in both builds: the
// threshold and the overflow counts reduced through subgroup arithmetic,
// and through shared-memory trees with `arithmetic` switched off. Sizes
// cross the workgroup and the segment (several segments: merge passes);
// tie-heavy and few-unmasked rows put more entries at the threshold than
// shared memory holds (the bisection over key and position), equal
// positions reach its last level (the slot).
TEST_CASE("select (direct): subgroup reductions and shared-memory trees both match std::partial_sort") {
  for (bool tiny : {false, true})
    for (bool arithmetic : {true, false}) {
      ContextOptions options;
      options.kernels = DeviceCaps::KernelStyle::direct;
      if (tiny) options.limits = LimitOverrides{32u, 1536u, std::nullopt};  // 32 invocations, 64-entry tiles
      if (!arithmetic) options.disabled_features = FeatureSet{}.add(Feature::subgroup_arithmetic);
      const auto context_owner = Context::create(options).value_or_throw();
      Context& context = *context_owner;
      const kernels::KernelPlan plan = kernels::plan_kernels(context.caps());
      REQUIRE(plan.direct);
      CHECK(plan.subgroup_reductions == (arithmetic && context.caps().subgroup_arithmetic));
      INFO((tiny ? "tiny limits" : "device limits") << ", arithmetic " << (arithmetic ? "on" : "switched off")
                                                    << ", subgroup size " << context.caps().subgroup_size);
      vk::DescriptorArena arena(context);
      std::mt19937_64 rng(2048 + (tiny ? 1 : 0) + (arithmetic ? 2 : 0));
      Sensitivity sensitivity;
      const std::vector<Fill> all = {Fill::ties, Fill::continuous, Fill::few_unmasked, Fill::coarse, Fill::descending};
      const uint32_t segment = plan.direct_segment;
      for (uint32_t count : {7u, 257u, segment - 1, 3 * segment + 5})
        for (uint32_t keep : keeps_for(plan, {1, 2, 8, 64, plan.max_keep()}))
          check_top_k(context, arena, count, keep, all, rng, sensitivity);
      for (uint32_t keep : keeps_for(plan, {4, plan.max_keep()}))
        check_top_k(context, arena, segment + 5, keep, all, rng, sensitivity, true);
      const uint32_t mk = plan.max_keep();
      for (const EvictCase& c : {EvictCase{255, 1, 1, 4, {1, 3, 32}}, EvictCase{60, 70, 70, 100, {32, mk}},
                                 EvictCase{segment, 96, 96, 4, {4, 64, mk}}})
        for (uint32_t policy : {kernels::kPolicyLfu, kernels::kPolicyLraSum})
          check_victims(context, arena, c, policy, policy == kernels::kPolicyLfu ? Scores::small_ints : Scores::float_normal,
                        rng, sensitivity);
      CHECK(sensitivity.tie_sensitive > 0);
      test::check_no_validation_messages(context);
    }
}
