// The rope kernels (rope, rope_pair) and the angle tables behind them
// against their float64 references (reference/ops) and llama.cpp's float
// chain, on randomized inputs at the device's limits and on the tiny
// context: positions up to 2^31, partial rotation, out-of-place rows,
// linear and llama3 scaling. Every word a kernel must not write starts as a
// sentinel NaN and is checked afterwards. The other block kernels are in
// test_block_kernels.cpp.
#include "block_harness.hpp"
#include "core/positions.hpp"

#include <doctest/doctest.h>

using namespace attendre;
using namespace attendre::test::block;

namespace {
// ---------------------------------------------------------------------------
// Rope

struct RopeCase {
  uint32_t rows, heads, head_dim, rope_dims;
  double theta;
  RopeScaling scaling = {};
  std::vector<double> factors = {};  // rope_freqs.weight (scaling.freq_factors)
  bool out_of_place = false;         // rotate into other rows of the same binding
  std::optional<int32_t> fixed = {}; // every row at this position
};

// The effective frequency of each pair in `angles` (radians per position,
// the float chain at p = 2^20, exact in scale) within float rounding of
// `expected` (a published formula in float64); none of `wrong`'s pairs being
// that close would be missed.
void check_recipe(const positions::RopeAngles& angles, std::span<const double> expected, std::span<const double> wrong) {
  const auto within = [&](std::span<const double> target) {
    size_t close = 0;
    for (uint32_t i = 0; i < target.size(); ++i) {
      const double f = positions::rope_angle(angles, 1 << 20, i) / double{1 << 20};
      close += std::abs(f - target[i]) <= 2e-5 * target[i];  // i roundings of the chain, ~6e-8 each
    }
    return close;
  };
  CHECK(within(expected) == expected.size());
  if (!wrong.empty()) CHECK(within(wrong) < wrong.size());
}

// The kernel against ops::rope with the library's angles, which
// `expected_frequencies` (an independent evaluation of a published formula)
// checks first, and must tell apart from `wrong_frequencies`.
void check_rope(Context& context, const kernels::KernelPlan& plan, RopeLayout layout, const RopeCase& c,
                std::mt19937_64& rng, std::span<const double> expected_frequencies = {},
                std::span<const double> wrong_frequencies = {}) {
  INFO("layout " << static_cast<int>(layout) << ", rows " << c.rows << ", heads " << c.heads << ", head_dim "
                 << c.head_dim << ", rope_dims " << c.rope_dims << ", theta " << c.theta << ", scaling "
                 << static_cast<int>(c.scaling.kind) << ", out of place " << c.out_of_place << ", fixed "
                 << c.fixed.value_or(0));
  const uint32_t width = c.heads * c.head_dim;
  const std::vector<float> x = normal_values(size_t{c.rows} * width, rng);
  // Small, large (past 2^24, where float(p) is inexact), extreme and negative positions.
  const int32_t special[] = {0, 1, 2, 1000000, 1000001, 16777217, 123456789, 2147483647, -7, -2147483647 - 1};
  std::uniform_int_distribution<int32_t> any(-2000000000, 2000000000), small(0, 4096);
  std::vector<int32_t> positions(c.rows);
  for (uint32_t r = 0; r < c.rows; ++r)
    positions[r] = c.fixed ? *c.fixed : r < std::size(special) ? special[r] : (r % 2 ? any(rng) : small(rng));

  const positions::RopeAngles angles = positions::rope_angles(c.theta, c.rope_dims, c.scaling, c.factors).value_or_throw();
  if (!expected_frequencies.empty()) check_recipe(angles, expected_frequencies, wrong_frequencies);
  kernels::Rope::Args args;
  args.rows = c.rows;
  args.heads = c.heads;
  args.head_dim = c.head_dim;
  args.rope_dims = c.rope_dims;
  args.x = wrapping(c.rows, 2 * width, 3, 1);  // room for an output row beside each input row
  if (c.out_of_place) args.y = RowRef{args.x.offset + width, args.x.stride, args.x.first, args.x.capacity};
  const RowRef out = args.y.value_or(args.x);
  args.positions = RowRef::ring(3, c.rows + 1, c.rows, 4);  // every third word, wrapping
  args.fixed_position = c.fixed;
  args.table_offset = 5;
  std::vector<uint32_t> x_words(extent(args.x, c.rows, 2 * width), kSentinel);
  put_rows(x_words, args.x, c.rows, width, x);
  std::vector<uint32_t> p_words(extent(args.positions, c.rows, 1), kSentinel);
  for (uint32_t r = 0; r < c.rows; ++r) p_words[args.positions.word(r)] = static_cast<uint32_t>(c.fixed ? 999 : positions[r]);
  std::vector<uint32_t> t_words(args.table_offset, kSentinel);
  for (float f : kernels::rope_angle_table(angles)) t_words.push_back(test::float_bits(f));

  const vk::Buffer x_buffer = test::upload_words(context, x_words, "test rope X");
  const vk::Buffer p_buffer = test::upload_words(context, p_words, "test positions");
  const vk::Buffer t_buffer = test::upload_words(context, t_words, "test rope table");
  vk::DescriptorArena arena(context);
  const kernels::Rope rope =
      kernels::Rope::create(context, arena, plan, layout, {&x_buffer}, {&p_buffer}, {&t_buffer}).value_or_throw();
  test::run_once(context, [&](vk::CommandRecorder& rec) { rope.record(rec, args).or_throw(); });
  const std::vector<uint32_t> after = test::download_words(context, x_buffer, 0, x_words.size());

  const std::vector<int64_t> positions64(positions.begin(), positions.end());
  const std::vector<double> expected = ops::rope(ops::widen(x), positions64, c.heads, c.head_dim, c.rope_dims, angles, layout);
  // The kernel forms the same float angle; only reducing it to a turn
  // (~1e-7 rad, growing as |p| * ~5e-15) and sin/cos part from float64. An
  // angle formed otherwise (a direct pow, or exactly) is off by ~1e-6 of
  // itself: 1 rad at p = 1e6, whole turns past 2^24.
  const std::vector<float> actual = get_rows(after, out, c.rows, width);
  const auto tolerance = [&](size_t i) {
    const double p = std::abs(static_cast<double>(positions[i / width]));
    return (5e-6 + 2e-14 * p) * (1.0 + std::abs(expected[i]));
  };
  check_close(actual, expected, tolerance);
  // Dims past rope_dims are untouched (or copied), bit for bit.
  uint32_t moved = 0;
  for (size_t i = 0; i < actual.size(); ++i)
    if (i % c.head_dim >= c.rope_dims && test::float_bits(actual[i]) != test::float_bits(x[i])) ++moved;
  CHECK(moved == 0);
  // Out of place, the input rows stay as they were.
  if (c.out_of_place) CHECK(get_rows(after, args.x, c.rows, width) == x);
  std::vector<uint32_t> before = x_words;
  for (uint32_t r = 0; r < c.rows; ++r)
    for (uint32_t i = 0; i < width; ++i) before[out.word(r) + i] = after[out.word(r) + i];
  CHECK(before == after);  // nothing else written
}

// The rope tests' shapes: rows, heads, head_dim, rope_dims, theta.
const RopeCase kRopeShapes[] = {{10, 1, 2, 2, 10000.0},
                                {17, 3, 64, 64, 10000.0},
                                {33, 2, 128, 32, 500000.0},  // partial rotation
                                {12, 5, 6, 4, 1000000.0}};

TEST_CASE("block kernels: rope matches the float64 reference at positions up to 2^31 (normal and neox)") {
  std::mt19937_64 rng(7003);
  for_each_context([&](Context& context) {
    const kernels::KernelPlan plan = kernels::plan_kernels(context.caps());
    for (RopeLayout layout : {RopeLayout::normal, RopeLayout::neox}) {
      for (const RopeCase& shape : kRopeShapes) check_rope(context, plan, layout, shape, rng);
      check_rope(context, folded(plan), layout, {40, 3, 96, 96, 10000.0}, rng);
    }
  });
}

// rope_pair (a block's queries and keys in one dispatch) against two plain
// rope dispatches, which the test above holds to the float64 reference: the
// same words, bit for bit, in both buffers, sentinels included.
void check_rope_pair(Context& context, const kernels::KernelPlan& plan, RopeLayout layout, uint32_t rows,
                     uint32_t heads_a, uint32_t heads_b, uint32_t head_dim, uint32_t rope_dims, bool a_out_of_place,
                     std::mt19937_64& rng) {
  INFO("layout " << static_cast<int>(layout) << ", rows " << rows << ", heads " << heads_a << " and " << heads_b
                 << ", head_dim " << head_dim << ", rope_dims " << rope_dims << ", out of place " << a_out_of_place);
  const positions::RopeAngles angles = positions::rope_angles(10000.0, rope_dims, {}).value_or_throw();
  const uint32_t width_a = heads_a * head_dim, width_b = heads_b * head_dim;
  kernels::Rope::Args a, b;
  a.rows = b.rows = rows;
  a.heads = heads_a;
  b.heads = heads_b;
  a.head_dim = b.head_dim = head_dim;
  a.rope_dims = b.rope_dims = rope_dims;
  a.table_offset = b.table_offset = 3;
  a.x = wrapping(rows, 2 * width_a, 3, 1);
  if (a_out_of_place) a.y = RowRef{a.x.offset + width_a, a.x.stride, a.x.first, a.x.capacity};
  // The second rows and their positions share a buffer: positions first, then the rows.
  a.positions = RowRef::ring(3, rows + 1, rows, 4);
  b.positions = RowRef::contiguous(1, 1);
  b.x = RowRef::contiguous(width_b + 1, 2 + rows);
  std::uniform_int_distribution<int32_t> any(-2000000000, 2000000000);
  std::vector<uint32_t> xa(extent(a.x, rows, 2 * width_a), kSentinel), xb(extent(b.x, rows, width_b), kSentinel);
  put_rows(xa, a.x, rows, width_a, normal_values(size_t{rows} * width_a, rng));
  put_rows(xb, b.x, rows, width_b, normal_values(size_t{rows} * width_b, rng));
  std::vector<uint32_t> pa(extent(a.positions, rows, 1), kSentinel);
  for (uint32_t r = 0; r < rows; ++r) {
    pa[a.positions.word(r)] = static_cast<uint32_t>(any(rng));
    xb[b.positions.word(r)] = static_cast<uint32_t>(any(rng));  // not a's: each set turns by its own
  }
  std::vector<uint32_t> table(a.table_offset, kSentinel);
  for (float f : kernels::rope_angle_table(angles)) table.push_back(test::float_bits(f));

  std::vector<uint32_t> got[2], want[2];
  for (const bool pair : {true, false}) {
    const vk::Buffer xa_buffer = test::upload_words(context, xa, "test rope q");
    const vk::Buffer xb_buffer = test::upload_words(context, xb, "test rope k");
    const vk::Buffer pa_buffer = test::upload_words(context, pa, "test q positions");
    const vk::Buffer t_buffer = test::upload_words(context, table, "test rope table");
    const vk::Buffer pb_buffer = test::upload_words(context, xb, "test k positions");  // the same words, apart
    vk::DescriptorArena arena(context);
    if (pair) {
      const kernels::Rope rope =
          kernels::Rope::create_pair(context, arena, plan, layout, {&xa_buffer}, {&pa_buffer}, {&t_buffer}, {&xb_buffer})
              .value_or_throw();
      test::run_once(context, [&](vk::CommandRecorder& rec) { rope.record_pair(rec, a, b).or_throw(); });
    } else {
      const kernels::Rope q =
          kernels::Rope::create(context, arena, plan, layout, {&xa_buffer}, {&pa_buffer}, {&t_buffer}).value_or_throw();
      const kernels::Rope k =
          kernels::Rope::create(context, arena, plan, layout, {&xb_buffer}, {&pb_buffer}, {&t_buffer}).value_or_throw();
      test::run_once(context, [&](vk::CommandRecorder& rec) {
        q.record(rec, a).or_throw();
        k.record(rec, b).or_throw();
      });
    }
    std::vector<uint32_t>* out = pair ? got : want;
    out[0] = test::download_words(context, xa_buffer, 0, xa.size());
    out[1] = test::download_words(context, xb_buffer, 0, xb.size());
  }
  CHECK(got[0] != xa);  // both sets turned
  CHECK(got[1] != xb);
  for (int set = 0; set < 2; ++set) {
    REQUIRE(got[set].size() == want[set].size());
    size_t differing = 0;
    for (size_t i = 0; i < got[set].size(); ++i) differing += got[set][i] != want[set][i];
    CHECK_MESSAGE(differing == 0, (set == 0 ? "q" : "k") << " words differing: " << differing);
  }
}

TEST_CASE("block kernels: rope_pair turns queries and keys in one dispatch as two rope dispatches do, bit for bit") {
  std::mt19937_64 rng(7004);
  for_each_context([&](Context& context) {
    const kernels::KernelPlan plan = kernels::plan_kernels(context.caps());
    for (RopeLayout layout : {RopeLayout::normal, RopeLayout::neox}) {
      check_rope_pair(context, plan, layout, 1, 9, 3, 64, 64, false, rng);  // a decode step, GQA
      check_rope_pair(context, plan, layout, 37, 5, 2, 128, 32, true, rng);  // rows past kRopeRowsPerGroup, partial
      check_rope_pair(context, plan, layout, 3, 1, 1, 2, 2, false, rng);
      check_rope_pair(context, folded(plan), layout, 19, 8, 4, 96, 96, false, rng);
    }
    // A pair kernel records only pairs; the second set turns in place by its own positions.
    vk::DescriptorArena arena(context);
    const vk::Buffer x = test::upload_words(context, std::vector<uint32_t>(64, 0), "test rope rows");
    const vk::Buffer p = test::upload_words(context, std::vector<uint32_t>(64, 0), "test rope positions");
    const vk::Buffer t = test::upload_words(context, std::vector<uint32_t>(64, 0), "test rope table");
    const vk::Buffer k = test::upload_words(context, std::vector<uint32_t>(64, 0), "test rope keys");
    const kernels::Rope pair =
        kernels::Rope::create_pair(context, arena, plan, RopeLayout::normal, {&x}, {&p}, {&t}, {&k}).value_or_throw();
    kernels::Rope::Args a{1, 1, 4, 4, RowRef::contiguous(4), {}, RowRef::contiguous(1), {}, 0};
    kernels::Rope::Args b = a;
    b.y = RowRef::contiguous(4, 8);
    test::run_once(context, [&](vk::CommandRecorder& rec) {
      CHECK_FALSE(pair.record(rec, a).ok());
      const Status refused = pair.record_pair(rec, a, b);
      REQUIRE_FALSE(refused.ok());
      CHECK(refused.message().find("in place") != std::string::npos);
    });
    test::check_no_validation_messages(context);
  });
}

TEST_CASE("block kernels: rope angles are llama.cpp's float chain, not the direct power") {
  // ggml_rope_cache_init: theta = p, then theta *= powf(base, -2 / dims) per pair, in float.
  const positions::RopeAngles angles = positions::rope_angles(10000.0, 32, {}).value_or_throw();
  CHECK(test::float_bits(angles.theta_scale) == test::float_bits(std::pow(10000.0f, -2.0f / 32.0f)));
  uint32_t apart = 0;
  double largest = 0.0;
  for (int64_t p : {int64_t{80}, int64_t{4095}, int64_t{-123457}, int64_t{1} << 31}) {
    float chain = static_cast<float>(p);
    for (uint32_t i = 0; i < 16; ++i, chain *= angles.theta_scale) {
      CHECK(test::float_bits(positions::rope_angle(angles, p, i)) == test::float_bits(chain));
      if (p != 80) continue;
      const double direct = 80.0 * std::pow(10000.0, -2.0 * i / 32);
      apart += chain != static_cast<float>(direct);
      largest = std::max(largest, std::abs(chain - direct));
    }
  }
  // At p = 80 the chain already parts from the direct angle (by ~1e-6 rad):
  // what the GPU test above tells apart at large positions.
  CHECK(apart > 0);
  CHECK(largest > 1e-6);
}

// Meta's Llama 3.1 apply_scaling, written out from the published code, in
// float64: the test's own evaluation, independent of core/positions.cpp.
std::vector<double> llama3_reference(double theta, uint32_t dims, double factor, double low, double high, double old_context) {
  std::vector<double> out;
  for (uint32_t i = 0; i < dims / 2; ++i) {
    const double freq = 1.0 / std::pow(theta, static_cast<double>(2 * i) / dims);
    const double wavelen = 2.0 * M_PI / freq;
    if (wavelen < old_context / high) {
      out.push_back(freq);
    } else if (wavelen > old_context / low) {
      out.push_back(freq / factor);
    } else {
      const double smooth = (old_context / wavelen - low) / (high - low);
      out.push_back((1.0 - smooth) * freq / factor + smooth * freq);
    }
  }
  return out;
}

// llama.cpp's convert_hf_to_gguf.py form of the same: per-pair divisors
// written to rope_freqs.weight, applied by ggml_rope_ext as theta / factor.
std::vector<double> llama3_gguf_factors(double theta, uint32_t dims, double factor, double low, double high,
                                        double old_context) {
  std::vector<double> factors;
  for (uint32_t i = 0; i < dims / 2; ++i) {
    const double wavelen = 2.0 * M_PI * std::pow(theta, static_cast<double>(2 * i) / dims);
    if (wavelen < old_context / high) factors.push_back(1.0);
    else if (wavelen > old_context / low) factors.push_back(factor);
    else {
      const double smooth = (old_context / wavelen - low) / (high - low);
      factors.push_back(1.0 / ((1.0 - smooth) / factor + smooth));
    }
  }
  return factors;
}

TEST_CASE("block kernels: rope with linear and llama3 scaling and per-pair factors matches the published formulas") {
  std::mt19937_64 rng(7013);
  // Llama 3.1: theta 500000, factor 8, low 1, high 4, original context 8192;
  // head_dim 128 puts pairs in all three wavelength bands.
  const double theta = 500000.0;
  const std::vector<double> meta = llama3_reference(theta, 128, 8.0, 1.0, 4.0, 8192.0);
  RopeScaling llama3;
  llama3.kind = RopeScaling::Kind::llama3;
  llama3.factor = 8.0;
  llama3.low_freq_factor = 1.0;
  llama3.high_freq_factor = 4.0;
  llama3.original_context = 8192.0;
  RopeScaling factors;
  factors.freq_factors = true;
  RopeScaling linear;
  linear.kind = RopeScaling::Kind::linear;
  linear.factor = 4.0;

  // The library's frequencies are the formulas' (both forms of llama3).
  const std::vector<double> gguf = llama3_gguf_factors(theta, 128, 8.0, 1.0, 4.0, 8192.0);
  const std::vector<double> ours = positions::rope_frequencies(theta, 128, llama3).value_or_throw();
  const std::vector<double> from_factors = positions::rope_frequencies(theta, 128, factors, gguf).value_or_throw();
  uint32_t low = 0, mid = 0, high = 0;
  for (uint32_t i = 0; i < 64; ++i) {
    CHECK(ours[i] == doctest::Approx(meta[i]).epsilon(1e-14));
    CHECK(from_factors[i] == doctest::Approx(meta[i]).epsilon(1e-14));
    const double unscaled = std::pow(theta, -2.0 * i / 128);
    low += meta[i] == unscaled / 8.0, high += meta[i] == unscaled, mid += meta[i] != unscaled && meta[i] != unscaled / 8.0;
  }
  CHECK((low > 0 && mid > 0 && high > 0));
  // A wrong llama3 (a hard step at the middle wavelength, no smoothing),
  // which the kernel comparison below must reject.
  std::vector<double> unsmoothed;
  for (uint32_t i = 0; i < 64; ++i) {
    const double unscaled = std::pow(theta, -2.0 * i / 128), wavelen = 2.0 * M_PI / unscaled;
    unsmoothed.push_back(wavelen > 8192.0 / 2.5 ? unscaled / 8.0 : unscaled);
  }

  for_each_context([&](Context& context) {
    const kernels::KernelPlan plan = kernels::plan_kernels(context.caps());
    for (RopeLayout layout : {RopeLayout::normal, RopeLayout::neox}) {
      check_rope(context, plan, layout, {17, 2, 128, 128, theta, llama3}, rng, meta, unsmoothed);
      check_rope(context, plan, layout, {17, 2, 128, 128, theta, factors, gguf}, rng, meta);
      // Every scaling on the plain rope test's shapes, against the formulas.
      for (RopeCase shape : kRopeShapes) {
        const double t = shape.theta;
        const uint32_t d = shape.rope_dims;
        shape.scaling = llama3;
        check_rope(context, plan, layout, shape, rng, llama3_reference(t, d, 8.0, 1.0, 4.0, 8192.0));
        shape.scaling = factors;
        shape.factors = llama3_gguf_factors(t, d, 8.0, 1.0, 4.0, 8192.0);
        check_rope(context, plan, layout, shape, rng, llama3_reference(t, d, 8.0, 1.0, 4.0, 8192.0));
        std::vector<double> linear_reference;
        for (uint32_t i = 0; i < d / 2; ++i) linear_reference.push_back(std::pow(t, -2.0 * i / d) / 4.0);
        shape.scaling = linear;
        shape.factors.clear();
        check_rope(context, plan, layout, shape, rng, linear_reference);
      }
      // LM-Infinite's uses: out of place with partial rotation, fixed positions.
      check_rope(context, plan, layout, {9, 2, 10, 6, 10000.0, linear, {}, true}, rng);
      check_rope(context, plan, layout, {7, 2, 7, 4, 10000.0, {}, {}, true}, rng);  // odd head_dim: one dim copied alone
      check_rope(context, folded(plan), layout, {21, 3, 16, 16, 10000.0, {}, {}, true, 4096}, rng);
      check_rope(context, plan, layout, {5, 2, 8, 8, 10000.0, {}, {}, false, -4096}, rng);
    }
  });
}

}  // namespace
