// check_finite.comp through kernels::CheckFinite, one range and two
// (check_finite_pair, which a stack block runs over its attention outputs
// and output rows): each range flags its own word exactly when a NaN or an
// infinity lies inside it, at sizes that cross the workgroup and, under the
// tiny limits, fold the grid; values just outside a range never count.
#include "kernel_harness.hpp"
#include "support.hpp"

#include "kernels/check_finite.hpp"
#include "kernels/kernel_plan.hpp"

#include <doctest/doctest.h>

#include <limits>
#include <random>

using namespace attendre;

namespace {

struct Range {
  uint32_t first = 0, count = 0;
  int64_t bad = -1;  // index of a non-finite value in the buffer, or -1
  float value = std::numeric_limits<float>::quiet_NaN();
};

std::vector<uint32_t> values_with(uint32_t words, const Range& r, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> unit(-1.0f, 1.0f);  // scaled: finite values up to the float32 maximum
  std::vector<uint32_t> v(words);
  for (uint32_t& w : v) w = test::float_bits(unit(rng) * std::numeric_limits<float>::max());
  if (r.bad >= 0) v[static_cast<size_t>(r.bad)] = test::float_bits(r.value);
  return v;
}

// Runs a single (b.count == 0 and !pair) or paired check; returns the two flags.
std::pair<uint32_t, uint32_t> run_check(Context& context, bool pair, const Range& a, const Range& b, uint64_t seed) {
  const kernels::KernelPlan plan = kernels::plan_kernels(context.caps());
  const uint32_t words_a = a.first + a.count + 3, words_b = b.first + b.count + 3;
  const vk::Buffer values_a = test::upload_words(context, values_with(words_a, a, seed), "values a");
  const vk::Buffer values_b = test::upload_words(context, values_with(words_b, b, seed + 1), "values b");
  const vk::Buffer flags_a = test::device_words(context, 1, 0u, "flag a"), flags_b = test::device_words(context, 1, 0u, "flag b");
  vk::DescriptorArena arena(context);
  const vk::BufferBinding flag_a = vk::BufferBinding::words(flags_a, 0, 1), flag_b = vk::BufferBinding::words(flags_b, 0, 1);
  const kernels::CheckFinite check =
      (pair ? kernels::CheckFinite::create_pair(context, arena, plan, {&values_a}, flag_a, {&values_b}, flag_b)
            : kernels::CheckFinite::create(context, arena, plan, {&values_a}, flag_a))
          .value_or_throw();
  test::run_once(context, [&](vk::CommandRecorder& rec) { check.record(rec, a.first, a.count, b.first, b.count); });
  return {test::download_words(context, flags_a, 0, 1)[0], test::download_words(context, flags_b, 0, 1)[0]};
}

bool inside(const Range& r) { return r.bad >= r.first && r.bad < int64_t{r.first} + r.count; }

void check_ranges(Context& context) {
  const kernels::KernelPlan plan = kernels::plan_kernels(context.caps());
  const uint32_t W = plan.workgroup;
  uint64_t seed = 1;
  const float inf = std::numeric_limits<float>::infinity();
  for (uint32_t count_a : {1u, W - 1, W + 1, 3 * W + 7, 40 * W + 5})
    for (uint32_t count_b : {0u, 1u, W, 2 * W + 3, 50 * W + 1}) {
      const int64_t first = 5, none = -1;
      // Bad values inside either range (first, last and a middle word),
      // just before and just past it, or none.
      for (int where = 0; where < 6; ++where) {
        Range a{5, count_a}, b{5, count_b};
        switch (where) {
          case 0: a.bad = first + count_a - 1; a.value = inf; break;
          case 1: b.bad = count_b ? first + count_b / 2 : none; b.value = -inf; break;
          case 2: a.bad = first; b.bad = count_b ? first + count_b - 1 : none; break;
          case 3: a.bad = first - 1; b.bad = first + count_b; break;  // just outside both
          case 4: a.bad = first + count_a; break;
          default: break;
        }
        INFO("count_a " << count_a << " count_b " << count_b << " case " << where);
        const auto [flag_a, flag_b] = run_check(context, true, a, b, ++seed);
        CHECK(flag_a == (inside(a) ? 1u : 0u));
        CHECK(flag_b == (inside(b) ? 1u : 0u));
        if (count_b == 0 && where != 1) {  // the single-range build agrees, and never touches flag b
          const auto [single_a, single_b] = run_check(context, false, a, Range{}, seed);
          CHECK(single_a == (inside(a) ? 1u : 0u));
          CHECK(single_b == 0u);
        }
      }
    }
}

}  // namespace

TEST_CASE("check finite: one range and a pair flag exactly the ranges holding NaN or infinity") {
  check_ranges(test::gpu());
  test::check_no_validation_messages(test::gpu());
}

TEST_CASE("check finite: the same under the tiny limits (folded grids)") {
  check_ranges(test::tiny_gpu());
  test::check_no_validation_messages(test::tiny_gpu());
}
