// The matmul and matvec kernels against the float64 reference: fp32 and
// fp16 weights, odd shapes crossing tiles, rings that wrap, residuals, and
// grids folded within the device's limits (block_harness.hpp).
#include "block_harness.hpp"

#include <doctest/doctest.h>

using namespace attendre;
using namespace attendre::test::block;

namespace {
// ---------------------------------------------------------------------------
// Matmul

enum class Residual { none, in_place, separate };

struct MatmulCase {
  uint32_t rows, in, out;
  bool bias = false;
  Residual residual = Residual::none;
  bool ring = false;
};

void check_matmul(Context& context, const kernels::KernelPlan& plan, WeightType type, const MatmulCase& c,
                  std::mt19937_64& rng) {
  INFO("rows " << c.rows << ", in " << c.in << ", out " << c.out << ", bias " << c.bias << ", residual "
               << static_cast<int>(c.residual) << ", ring " << c.ring << ", fp16 " << (type == WeightType::f16));
  const std::vector<float> a = normal_values(size_t{c.rows} * c.in, rng);
  const std::vector<float> w = normal_values(size_t{c.out} * c.in, rng);
  const std::vector<float> bias = normal_values(c.out, rng);
  const std::vector<float> residual = normal_values(size_t{c.rows} * c.out, rng);

  // Weights at an odd element offset, the bias after them in the same buffer.
  std::vector<uint32_t> w_words;
  kernels::Matmul::Args args;
  args.rows = c.rows;
  args.in = c.in;
  args.out = c.out;
  args.w_offset = type == WeightType::f16 ? 3 : 5;
  const Weights weights = put_weights(w_words, type, args.w_offset, w);
  args.bias = c.bias;
  args.bias_offset = weights.end_word + 1;
  w_words.resize(args.bias_offset + c.out + 2, kSentinel);
  for (uint32_t o = 0; o < c.out; ++o) w_words[args.bias_offset + o] = test::float_bits(bias[o]);

  args.a = c.ring ? wrapping(c.rows, c.in, 2, 7) : RowRef::contiguous(c.in, 1);
  args.c = c.ring ? wrapping(c.rows, c.out, 1, 3) : RowRef::contiguous(c.out);
  args.residual = c.residual != Residual::none;
  std::vector<uint32_t> a_words(extent(args.a, c.rows, c.in), kSentinel);
  put_rows(a_words, args.a, c.rows, c.in, a);
  std::vector<uint32_t> c_words(extent(args.c, c.rows, c.out), kSentinel);
  std::vector<uint32_t> r_words(1, kSentinel);
  if (c.residual == Residual::in_place) {
    args.r = args.c;
    put_rows(c_words, args.c, c.rows, c.out, residual);
  } else if (c.residual == Residual::separate) {
    args.r = RowRef::ring(c.out + 3, c.rows + 1, c.rows, 2);
    r_words.assign(extent(args.r, c.rows, c.out), kSentinel);
    put_rows(r_words, args.r, c.rows, c.out, residual);
  }

  const vk::Buffer a_buffer = test::upload_words(context, a_words, "test A");
  const vk::Buffer w_buffer = test::upload_words(context, w_words, "test W");
  const vk::Buffer c_buffer = test::upload_words(context, c_words, "test C");
  const vk::Buffer r_buffer = test::upload_words(context, r_words, "test R");
  vk::DescriptorArena arena(context);
  const kernels::Matmul matmul =
      kernels::Matmul::create(context, arena, plan, element_type(type), {&a_buffer}, {&w_buffer}, {&c_buffer},
                              c.residual == Residual::separate ? vk::BufferBinding{&r_buffer} : vk::BufferBinding{})
          .value_or_throw();
  test::run_once(context, [&](vk::CommandRecorder& rec) { matmul.record(rec, args).or_throw(); });
  const std::vector<uint32_t> after = test::download_words(context, c_buffer, 0, c_words.size());

  const std::vector<double> expected =
      ops::matmul(ops::widen(a), weights.values, c.rows, c.in, c.out, c.bias ? ops::widen(bias) : std::vector<double>{},
                  args.residual ? ops::widen(residual) : std::vector<double>{});
  // fp32 accumulation of `in` unit-normal products: ~1e-5 of sqrt(in).
  const double tolerance = 1e-5 * (std::sqrt(static_cast<double>(c.in)) + 4.0);
  check_close(get_rows(after, args.c, c.rows, c.out), expected, [&](size_t) { return tolerance; });
  check_untouched(c_words, after, args.c, c.rows, c.out);
}

TEST_CASE("block kernels: matmul and matvec match the float64 reference (fp32 and fp16 weights)") {
  std::mt19937_64 rng(7001);
  const uint32_t rows_list[] = {1, 2, 3, 4, 5, 17, 64, 65, 130};
  const uint32_t ins[] = {1, 3, 64, 127, 300};
  const uint32_t outs[] = {1, 7, 64, 65, 513};
  for_each_context([&](Context& context) {
    const kernels::KernelPlan plan = kernels::plan_kernels(context.caps());
    for (WeightType type : weight_types(context)) {
      for (uint32_t ri = 0; ri < std::size(rows_list); ++ri)
        for (uint32_t ii = 0; ii < std::size(ins); ++ii) {
          MatmulCase c{rows_list[ri], ins[ii], outs[(ri + ii) % 5]};
          c.bias = (ri + ii) % 2 == 0;
          c.residual = static_cast<Residual>((ri + 2 * ii) % 3);
          c.ring = (ri + ii) % 3 != 1;
          check_matmul(context, plan, type, c, rng);
        }
      // Wide outputs (vocabulary logits) on both paths.
      check_matmul(context, plan, type, {1, 3, 200003, true}, rng);
      check_matmul(context, plan, type, {5, 3, 70001, true, Residual::in_place, true}, rng);
      // Folded grids: every workgroup loops over many tiles or output groups.
      const kernels::KernelPlan tight = folded(plan);
      check_matmul(context, tight, type, {2, 300, 513, true, Residual::separate, true}, rng);
      check_matmul(context, tight, type, {130, 127, 65, true, Residual::in_place, true}, rng);
    }
  });
}

TEST_CASE("block kernels: matmul picks matvec for few rows and folds wide grids within the limits") {
  Context& context = test::gpu();
  kernels::KernelPlan plan = kernels::plan_kernels(context.caps());
  vk::DescriptorArena arena(context);
  const vk::Buffer a = test::device_words(context, 16, 0, "test A"), w = test::device_words(context, 16, 0, "test W"),
                   c = test::device_words(context, 16, 0, "test C");
  const kernels::Matmul matmul =
      kernels::Matmul::create(context, arena, plan, ElementType::f32, {&a}, {&w}, {&c}).value_or_throw();
  CHECK(matmul.uses_matvec(kernels::kMatvecMaxRows));
  CHECK_FALSE(matmul.uses_matvec(kernels::kMatvecMaxRows + 1));
  kernels::Matmul::Args args;
  args.rows = 130;
  args.in = 4096;
  args.out = 200000;
  args.a = RowRef::contiguous(args.in);
  args.c = RowRef::contiguous(args.out);
  const kernels::Grid g = matmul.grid(args);
  CHECK(g.x <= plan.max_groups_x);
  CHECK(g.y <= plan.max_groups_y);
  CHECK(uint64_t{g.x} * g.y >= uint64_t{kernels::ceil_div(args.out, plan.matmul_tile_outputs)} *
                                   kernels::ceil_div(args.rows, plan.matmul_tile_rows));
  const kernels::MatmulParams p = matmul.params({1, 4096, 200000, args.a, args.c}).value_or_throw();
  CHECK(p.lanes >= 1);
  CHECK(plan.matvec_workgroup % p.lanes == 0);
  // Output rows that would overlap are rejected.
  args.c = RowRef::ring(args.out, 3, 0);
  CHECK(matmul.params(args).status().code() == ErrorCode::invalid_argument);
  test::check_no_validation_messages(context);
}

TEST_CASE("block kernels: fp16 weights on a device without 16-bit storage read unpacked 32-bit words") {
  // The numbers of the word variants are checked by the suite run with
  // ATTENDRE_DISABLE (tests/CMakeLists.txt); here, that they are the ones chosen.
  Context& gpu = test::gpu();
  ExternalDevice external{gpu.instance(), gpu.physical_device(), gpu.device(), gpu.queue(), gpu.queue_family(), false};
  auto context_owner = Context::adopt(external).value_or_throw();
  Context& context = *context_owner;
  REQUIRE_FALSE(context.caps().storage_16bit);
  CHECK(kernels::f16_as_words(context.caps()));
  using kernels::ShaderId;
  using kernels::WeightKernel;
  CHECK(kernels::weight_variant(context, WeightKernel::gemm, ElementType::f16, "W").value_or_throw() ==
        ShaderId::matmul_f16_words);
  CHECK(kernels::weight_variant(context, WeightKernel::matvec, ElementType::f16, "W").value_or_throw() ==
        ShaderId::matvec_f16_words);
  CHECK(kernels::weight_variant(context, WeightKernel::direct, ElementType::f16, "W").value_or_throw() ==
        ShaderId::matmul_direct_f16_words);
  CHECK(kernels::weight_variant(context, WeightKernel::embedding, ElementType::f16, "W").value_or_throw() ==
        ShaderId::embedding_f16_words);
  const kernels::KernelPlan plan = kernels::plan_kernels(context.caps());
  vk::DescriptorArena arena(context);
  const vk::Buffer in = vk::Buffer::create(context, 64, vk::MemoryIntent::device, "test in").value_or_throw();
  const vk::Buffer w = vk::Buffer::create(context, 64, vk::MemoryIntent::device, "test W").value_or_throw();
  const vk::Buffer out = vk::Buffer::create(context, 64, vk::MemoryIntent::device, "test out").value_or_throw();
  CHECK(kernels::Matmul::create(context, arena, plan, ElementType::f16, {&in}, {&w}, {&out}).ok());
  CHECK(kernels::Embedding::create(context, arena, plan, ElementType::f16, {&in}, {&w}, {&out}).ok());
  test::check_no_validation_messages(gpu);
}

}  // namespace

// ---------------------------------------------------------------------------
// Products that RMS-normalize their A rows on the way in (kernels::RmsInput)

TEST_CASE("block kernels: RMS-normalizing products equal the norm then the product (direct kernels)") {
  std::mt19937_64 rng(7011);
  struct Shape {
    uint32_t rows, in, out;
    bool ring, bias;
  };
  // Tiles of many and of few rows, `in` off vec4 (the scalar path), tails past the shared chunks.
  const Shape shapes[] = {{1, 64, 65, false, true}, {2, 300, 7, true, false}, {3, 127, 513, true, true},
                          {9, 3, 64, false, false}, {65, 64, 65, true, true}, {1, 576, 130, false, false}};
  for_each_context([&](Context& context) {
    const kernels::KernelPlan plan = kernels::plan_kernels(context.caps());
    for (WeightType type : weight_types(context)) {
      if (!kernels::folds_rms(plan, element_type(type), MemoryStorage::f32)) {
        // The tiled kernels split `in`: the product refuses to normalize.
        std::vector<uint32_t> one(8, 0);
        const vk::Buffer b = test::upload_words(context, one, "test rows");
        vk::DescriptorArena arena(context);
        CHECK_FALSE(kernels::Matmul::create(context, arena, plan, element_type(type), {&b}, {&b}, {&b}, {},
                                            MemoryStorage::f32, std::nullopt, kernels::RmsInput{{&b}, 0, 1e-5f})
                        .ok());
        continue;
      }
      for (const Shape& s : shapes) {
        INFO("rows " << s.rows << ", in " << s.in << ", out " << s.out << ", fp16 " << (type == WeightType::f16));
        std::vector<float> a = normal_values(size_t{s.rows} * s.in, rng);
        for (float& v : a) v *= 3.0f;  // rows whose RMS is far from 1
        if (s.rows > 2) a[s.in] = 3e19f;  // row 1's mean square leaves fp32: NaN outputs, as norm.comp writes
        const std::vector<float> w = normal_values(size_t{s.out} * s.in, rng);
        const std::vector<float> gains = normal_values(s.in, rng), bias = normal_values(s.out, rng);
        const float eps = 1e-5f;
        std::vector<uint32_t> w_words;
        kernels::Matmul::Args args;
        args.rows = s.rows;
        args.in = s.in;
        args.out = s.out;
        const Weights weights = put_weights(w_words, type, 0, w);
        args.bias = s.bias;
        args.bias_offset = weights.end_word + 1;
        w_words.resize(args.bias_offset + s.out + 2, kSentinel);
        for (uint32_t o = 0; o < s.out; ++o) w_words[args.bias_offset + o] = test::float_bits(bias[o]);
        args.a = s.ring ? wrapping(s.rows, s.in, 4, 8) : RowRef::contiguous(s.in);
        args.c = s.ring ? wrapping(s.rows, s.out, 1, 3) : RowRef::contiguous(s.out);
        std::vector<uint32_t> a_words(extent(args.a, s.rows, s.in), kSentinel);
        put_rows(a_words, args.a, s.rows, s.in, a);
        std::vector<uint32_t> c_words(extent(args.c, s.rows, s.out), kSentinel);
        // The gains from word 8 of their buffer (a multiple of 4, as RmsInput needs).
        std::vector<uint32_t> g_words(8 + s.in, kSentinel);
        for (uint32_t i = 0; i < s.in; ++i) g_words[8 + i] = test::float_bits(gains[i]);
        const vk::Buffer a_buffer = test::upload_words(context, a_words, "test A");
        const vk::Buffer w_buffer = test::upload_words(context, w_words, "test W");
        const vk::Buffer c_buffer = test::upload_words(context, c_words, "test C");
        const vk::Buffer g_buffer = test::upload_words(context, g_words, "test gains");
        vk::DescriptorArena arena(context);
        const kernels::Matmul matmul =
            kernels::Matmul::create(context, arena, plan, element_type(type), {&a_buffer}, {&w_buffer}, {&c_buffer}, {},
                                    MemoryStorage::f32, std::nullopt, kernels::RmsInput{{&g_buffer}, 8, eps})
                .value_or_throw();
        test::run_once(context, [&](vk::CommandRecorder& rec) { matmul.record(rec, args).or_throw(); });
        const std::vector<uint32_t> after = test::download_words(context, c_buffer, 0, c_words.size());

        // The float64 norm, then the float64 product.
        std::vector<double> normed(a.size());
        std::vector<bool> nan_row(s.rows, false);
        for (uint32_t r = 0; r < s.rows; ++r) {
          double squares = 0;
          for (uint32_t i = 0; i < s.in; ++i) squares += double(a[size_t{r} * s.in + i]) * a[size_t{r} * s.in + i];
          nan_row[r] = squares > 3.4e38;  // the fp32 sum of squares overflows
          const double inv = 1.0 / std::sqrt(squares / s.in + eps);
          for (uint32_t i = 0; i < s.in; ++i) normed[size_t{r} * s.in + i] = a[size_t{r} * s.in + i] * inv * gains[i];
        }
        const std::vector<double> expected = ops::matmul(normed, weights.values, s.rows, s.in, s.out,
                                                         s.bias ? ops::widen(bias) : std::vector<double>{}, {});
        const std::vector<float> got = get_rows(after, args.c, s.rows, s.out);
        std::vector<float> finite_got;
        std::vector<double> finite_expected;
        for (uint32_t r = 0; r < s.rows; ++r)
          for (uint32_t o = 0; o < s.out; ++o) {
            const float g = got[size_t{r} * s.out + o];
            if (nan_row[r]) {
              CHECK(std::isnan(g));
            } else {
              finite_got.push_back(g);
              finite_expected.push_back(expected[size_t{r} * s.out + o]);
            }
          }
        // Normed values are ~unit-normal times the gains: the plain product's bound.
        const double tolerance = 1e-5 * (std::sqrt(static_cast<double>(s.in)) + 4.0);
        check_close(finite_got, finite_expected, [&](size_t) { return tolerance; });
        check_untouched(c_words, after, args.c, s.rows, s.out);
      }
    }
  });
}

// ---------------------------------------------------------------------------
// Products whose outputs go to two bindings (kernels::SplitRows: a block's
// [wq; wk; wv] in one dispatch)

TEST_CASE("block kernels: split products write each stacked matrix's outputs where its own product would") {
  std::mt19937_64 rng(7023);
  struct Shape {
    uint32_t rows, in, q, k, v;
    bool ring, rms;
  };
  // Decoding (1-2 rows) and tiles of many rows; parts that straddle the
  // workgroups' output spans; `in` off vec4 (the scalar path) for the float types.
  const Shape shapes[] = {{1, 64, 65, 17, 17, false, true}, {2, 96, 8, 130, 130, true, false},
                          {9, 32, 64, 64, 64, false, true},  {65, 64, 33, 7, 9, true, true},
                          {3, 127, 20, 5, 5, true, true},    {1, 576, 576, 192, 192, true, true}};
  const ElementType types[] = {ElementType::f32, ElementType::f16, ElementType::q8_0};
  for_each_context([&](Context& context) {
    const kernels::KernelPlan plan = kernels::plan_kernels(context.caps());
    for (ElementType type : types) {
      INFO("weights " << to_string(type));
      if (!kernels::splits_outputs(context.caps(), plan, type, MemoryStorage::f32)) {
        // No fifth storage buffer, no texel buffers or the tiled kernels: refused, named.
        std::vector<uint32_t> one(8, 0);
        const vk::Buffer b = test::upload_words(context, one, "test rows");
        const vk::Buffer s = test::upload_words(context, one, "test split rows");
        vk::DescriptorArena arena(context);
        const Result<kernels::Matmul> refused = kernels::Matmul::create(
            context, arena, plan, type, {&b}, {&b}, {&b}, {}, MemoryStorage::f32, std::nullopt, std::nullopt, {&s});
        REQUIRE_FALSE(refused.ok());
        CHECK(refused.status().code() == ErrorCode::unsupported);
        continue;
      }
      for (const Shape& s : shapes) {
        if (element_block(type).values > 1 && s.in % element_block(type).values != 0) continue;
        INFO("rows " << s.rows << ", in " << s.in << ", parts " << s.q << "/" << s.k << "/" << s.v << ", rms " << s.rms);
        const uint32_t out = s.q + s.k + s.v;
        const std::vector<float> a = normal_values(size_t{s.rows} * s.in, rng, 0.0f, 2.0f);
        const std::vector<float> w = normal_values(size_t{out} * s.in, rng);
        const std::vector<float> gains = normal_values(s.in, rng);
        const float eps = 1e-5f;
        std::vector<uint32_t> w_words;
        std::vector<double> w_values;
        kernels::Matmul::Args args;
        if (type == ElementType::q8_0) {
          const Encoded e = encode(type, w);
          w_words = e.words;
          w_values = e.values;
          args.w_offset = e.offset;
        } else {
          const Weights put = put_weights(w_words, type == ElementType::f16 ? WeightType::f16 : WeightType::f32, 2, w);
          w_values = put.values;
          args.w_offset = 2;
        }
        args.rows = s.rows;
        args.in = s.in;
        args.out = out;
        args.a = s.ring ? wrapping(s.rows, s.in, 4, 8) : RowRef::contiguous(s.in);
        args.c = s.ring ? wrapping(s.rows, s.q, 1, 3) : RowRef::contiguous(s.q);
        // Keys and values as in a chunk: two sections of one binding, rows padded.
        const RowRef c2 = RowRef::contiguous(s.k + 2, 5);
        const RowRef c3 = RowRef::contiguous(s.v + 1, static_cast<uint32_t>(extent(c2, s.rows, s.k)) + 3);
        args.split = kernels::SplitRows{s.q, s.q + s.k, c2, c3};
        std::vector<uint32_t> a_words(extent(args.a, s.rows, s.in), kSentinel);
        put_rows(a_words, args.a, s.rows, s.in, a);
        std::vector<uint32_t> c_words(extent(args.c, s.rows, s.q), kSentinel);
        std::vector<uint32_t> split_words(extent(c3, s.rows, s.v) + 2, kSentinel);
        std::vector<uint32_t> g_words(8 + s.in, kSentinel);
        for (uint32_t i = 0; i < s.in; ++i) g_words[8 + i] = test::float_bits(gains[i]);
        const vk::Buffer a_buffer = test::upload_words(context, a_words, "test A");
        const vk::Buffer w_buffer = test::upload_words(context, w_words, "test W");
        const vk::Buffer c_buffer = test::upload_words(context, c_words, "test C");
        const vk::Buffer split_buffer = test::upload_words(context, split_words, "test split rows");
        const vk::Buffer g_buffer = test::upload_words(context, g_words, "test gains");
        vk::DescriptorArena arena(context);
        const std::optional<kernels::RmsInput> rms =
            s.rms ? std::optional(kernels::RmsInput{{&g_buffer}, 8, eps}) : std::nullopt;
        const kernels::Matmul matmul =
            kernels::Matmul::create(context, arena, plan, type, {&a_buffer}, {&w_buffer}, {&c_buffer}, {},
                                    MemoryStorage::f32, std::nullopt, rms, {&split_buffer})
                .value_or_throw();
        test::run_once(context, [&](vk::CommandRecorder& rec) { matmul.record(rec, args).or_throw(); });
        const std::vector<uint32_t> c_after = test::download_words(context, c_buffer, 0, c_words.size());
        const std::vector<uint32_t> split_after = test::download_words(context, split_buffer, 0, split_words.size());

        std::vector<double> input(a.begin(), a.end());
        if (s.rms) {
          for (uint32_t r = 0; r < s.rows; ++r) {
            double squares = 0;
            for (uint32_t i = 0; i < s.in; ++i) squares += input[size_t{r} * s.in + i] * input[size_t{r} * s.in + i];
            const double inv = 1.0 / std::sqrt(squares / s.in + eps);
            for (uint32_t i = 0; i < s.in; ++i) input[size_t{r} * s.in + i] *= inv * gains[i];
          }
        }
        const std::vector<double> expected = ops::matmul(input, w_values, s.rows, s.in, out, {}, {});
        // Each part's columns of the expected rows, against where that part's rows are.
        auto part = [&](uint32_t from, uint32_t cols) {
          std::vector<double> p(size_t{s.rows} * cols);
          for (uint32_t r = 0; r < s.rows; ++r)
            for (uint32_t j = 0; j < cols; ++j) p[size_t{r} * cols + j] = expected[size_t{r} * out + from + j];
          return p;
        };
        const double tolerance = 1e-5 * (std::sqrt(static_cast<double>(s.in)) + 4.0) * (s.rms ? 1.0 : 2.0);
        auto near = [&](size_t) { return tolerance; };
        check_close(get_rows(c_after, args.c, s.rows, s.q), part(0, s.q), near);
        check_close(get_rows(split_after, c2, s.rows, s.k), part(s.q, s.k), near);
        check_close(get_rows(split_after, c3, s.rows, s.v), part(s.q + s.k, s.v), near);
        check_untouched(c_words, c_after, args.c, s.rows, s.q);
        // Every split word outside the c2 and c3 rows keeps its sentinel.
        std::vector<bool> written(split_words.size(), false);
        for (const auto& [rows, cols] : {std::pair{c2, s.k}, std::pair{c3, s.v}})
          for (uint32_t r = 0; r < s.rows; ++r)
            for (uint32_t j = 0; j < cols; ++j) written[rows.word(r) + j] = true;
        uint32_t changed = 0;
        for (size_t i = 0; i < split_words.size(); ++i) changed += !written[i] && split_after[i] != kSentinel;
        CHECK(changed == 0);
      }
      // Split rows must be given, contiguous, in order, and only to a split product.
      std::vector<uint32_t> words(64, 0);
      const vk::Buffer b = test::upload_words(context, words, "test rows");
      const vk::Buffer c = test::upload_words(context, words, "test C");
      const vk::Buffer other = test::upload_words(context, words, "test split rows");
      vk::DescriptorArena arena(context);
      const kernels::Matmul split = kernels::Matmul::create(context, arena, plan, type, {&b}, {&b}, {&c}, {},
                                                            MemoryStorage::f32, std::nullopt, std::nullopt, {&other})
                                        .value_or_throw();
      kernels::Matmul::Args args;
      args.rows = 2;
      args.in = 32;
      args.out = 6;
      args.a = RowRef::contiguous(32);
      args.c = RowRef::contiguous(2);
      CHECK_FALSE(split.params(args).ok());
      args.split = kernels::SplitRows{2, 4, RowRef::contiguous(2), RowRef::ring(2, 4, 1, 8)};
      CHECK_FALSE(split.params(args).ok());
      args.split = kernels::SplitRows{4, 2, RowRef::contiguous(2), RowRef::contiguous(2, 8)};
      CHECK_FALSE(split.params(args).ok());
      args.split = kernels::SplitRows{2, 4, RowRef::contiguous(2), RowRef::contiguous(2, 8)};
      CHECK(split.params(args).ok());
      const kernels::Matmul plain =
          kernels::Matmul::create(context, arena, plan, type, {&b}, {&b}, {&c}).value_or_throw();
      CHECK_FALSE(plain.params(args).ok());
    }
  });
}
