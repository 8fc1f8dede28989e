// The other transformer block kernels (norm, activation, embedding, add;
// rope in test_rope_kernels.cpp) against their float64 references
// (reference/ops) on randomized inputs, on the device's limits and on the
// tiny context: odd shapes, rows in rings that wrap, in-place variants.
// Every word a kernel must not write starts as a sentinel NaN and is checked afterwards.
#include "block_harness.hpp"

#include <doctest/doctest.h>

using namespace attendre;
using namespace attendre::test::block;

namespace {
// ---------------------------------------------------------------------------
// Norm

void check_norm(Context& context, const kernels::KernelPlan& plan, NormKind kind, uint32_t rows, uint32_t dim,
                bool in_place, float mean, std::mt19937_64& rng) {
  INFO("kind " << static_cast<int>(kind) << ", rows " << rows << ", dim " << dim << ", in place " << in_place
               << ", mean " << mean);
  const std::vector<float> x = normal_values(size_t{rows} * dim, rng, mean, 1.0f);
  const std::vector<float> g = normal_values(dim, rng, 1.0f, 0.2f), b = normal_values(dim, rng, 0.0f, 0.5f);
  kernels::Norm::Args args;
  args.rows = rows;
  args.dim = dim;
  args.eps = 1e-5f;
  args.g_offset = 5;
  args.b_offset = 5 + dim + 3;
  std::vector<uint32_t> w_words(args.b_offset + dim + 1, kSentinel);
  for (uint32_t i = 0; i < dim; ++i) {
    w_words[args.g_offset + i] = test::float_bits(g[i]);
    w_words[args.b_offset + i] = test::float_bits(b[i]);
  }
  args.x = wrapping(rows, dim, 1, 2);
  args.y = in_place ? args.x : RowRef::contiguous(dim + 2, 1);
  std::vector<uint32_t> x_words(extent(args.x, rows, dim), kSentinel);
  put_rows(x_words, args.x, rows, dim, x);
  std::vector<uint32_t> y_words(extent(args.y, rows, dim), kSentinel);

  const vk::Buffer x_buffer = test::upload_words(context, x_words, "test X");
  const vk::Buffer w_buffer = test::upload_words(context, w_words, "test norm weights");
  const vk::Buffer y_buffer = test::upload_words(context, y_words, "test Y");
  const vk::Buffer& out = in_place ? x_buffer : y_buffer;
  vk::DescriptorArena arena(context);
  const kernels::Norm norm =
      kernels::Norm::create(context, arena, plan, kind, {&x_buffer}, {&w_buffer}, {&out}).value_or_throw();
  test::run_once(context, [&](vk::CommandRecorder& rec) { norm.record(rec, args).or_throw(); });
  const std::vector<uint32_t>& before = in_place ? x_words : y_words;
  const std::vector<uint32_t> after = test::download_words(context, out, 0, before.size());

  const std::vector<double> expected = kind == NormKind::rms
                                           ? ops::rms_norm(ops::widen(x), dim, ops::widen(g), args.eps)
                                           : ops::layer_norm(ops::widen(x), dim, ops::widen(g), ops::widen(b), args.eps);
  // A fp32 mean of size |mean| carries |mean| * 2^-24-sized errors into x - mean.
  const double relative = 2e-5 + (kind == NormKind::layer ? 2e-7 * std::abs(mean) : 0.0);
  check_close(get_rows(after, args.y, rows, dim), expected,
              [&](size_t i) { return relative * (1.0 + std::abs(expected[i])); });
  check_untouched(before, after, args.y, rows, dim);
}

TEST_CASE("block kernels: rms_norm and layer_norm match the float64 reference, in place and not") {
  std::mt19937_64 rng(7002);
  for_each_context([&](Context& context) {
    const kernels::KernelPlan plan = kernels::plan_kernels(context.caps());
    for (NormKind kind : {NormKind::rms, NormKind::layer}) {
      const uint32_t rows_list[] = {1, 3, 17, 65, 2, 5};
      const uint32_t dims[] = {1, 3, 64, 127, 300, 1025};
      for (uint32_t i = 0; i < 6; ++i) check_norm(context, plan, kind, rows_list[i], dims[i], i % 2 == 0, 0.0f, rng);
      // A large mean: a one-pass variance (E[x^2] - mean^2) loses ~1e-2 here.
      check_norm(context, plan, kind, 4, 500, true, 1000.0f, rng);
      check_norm(context, folded(plan), kind, 17, 33, false, 3.0f, rng);
    }
  });
}

// Per-head q/k norms (BlockConfig::qk_norm): each of a ring row's `heads`
// pieces of head_dim floats normalized alone, in place, with one shared gain.
void check_head_norm(Context& context, const kernels::KernelPlan& plan, uint32_t rows, uint32_t heads,
                     uint32_t head_dim, std::mt19937_64& rng) {
  INFO("rows " << rows << ", heads " << heads << ", head dim " << head_dim);
  const uint32_t row = heads * head_dim;
  const std::vector<float> x = normal_values(size_t{rows} * row, rng, 0.5f, 2.0f);
  const std::vector<float> g = normal_values(head_dim, rng, 1.0f, 0.3f);
  kernels::Norm::Args args;
  args.rows = rows;
  args.dim = head_dim;
  args.eps = 1e-6f;
  args.g_offset = 3;
  args.segments = heads;
  std::vector<uint32_t> w_words(args.g_offset + head_dim + 2, kSentinel);
  for (uint32_t i = 0; i < head_dim; ++i) w_words[args.g_offset + i] = test::float_bits(g[i]);
  args.x = args.y = wrapping(rows, row, 3, 1);  // ring rows with words between them, which stay untouched
  std::vector<uint32_t> x_words(extent(args.x, rows, row), kSentinel);
  put_rows(x_words, args.x, rows, row, x);
  const vk::Buffer x_buffer = test::upload_words(context, x_words, "test q rows");
  const vk::Buffer w_buffer = test::upload_words(context, w_words, "test q norm weights");
  vk::DescriptorArena arena(context);
  const kernels::Norm norm =
      kernels::Norm::create(context, arena, plan, NormKind::rms, {&x_buffer}, {&w_buffer}, {&x_buffer})
          .value_or_throw();
  test::run_once(context, [&](vk::CommandRecorder& rec) { norm.record(rec, args).or_throw(); });
  const std::vector<uint32_t> after = test::download_words(context, x_buffer, 0, x_words.size());
  // Rows of heads x head_dim: rms_norm over head_dim normalizes each head.
  const std::vector<double> expected = ops::rms_norm(ops::widen(x), head_dim, ops::widen(g), args.eps);
  check_close(get_rows(after, args.y, rows, row), expected, [&](size_t i) { return 2e-5 * (1.0 + std::abs(expected[i])); });
  check_untouched(x_words, after, args.y, rows, row);
}

TEST_CASE("block kernels: per-head q/k norms (norm segments) match the float64 reference across workgroup sizes") {
  std::mt19937_64 rng(7003);
  for_each_context([&](Context& context) {
    const kernels::KernelPlan plan = kernels::plan_kernels(context.caps());
    const uint32_t W = plan.norm_workgroup;
    // Heads narrower than, equal to, and one past the workgroup; one head;
    // more pieces than a folded grid covers in one pass.
    check_head_norm(context, plan, 5, 4, 16, rng);
    check_head_norm(context, plan, 3, 2, W, rng);
    check_head_norm(context, plan, 2, 3, W + 1, rng);
    check_head_norm(context, plan, 7, 1, 128, rng);
    check_head_norm(context, folded(plan), 9, 5, 24, rng);
    // Segments are fp32 rows only.
    const vk::Buffer rows = test::upload_words(context, std::vector<uint32_t>(64, 0), "test rows");
    const vk::Buffer out = test::upload_words(context, std::vector<uint32_t>(64, 0), "test out");
    vk::DescriptorArena arena(context);
    const kernels::Norm half = kernels::Norm::create(context, arena, plan, NormKind::rms, {&rows}, {&rows}, {&out},
                                                     MemoryStorage::f16).value_or_throw();
    kernels::Norm::Args args;
    args.rows = 2;
    args.dim = 8;
    args.segments = 2;
    args.x = RowRef::contiguous(16);
    args.y = RowRef::contiguous(8);
    test::run_once(context, [&](vk::CommandRecorder& rec) {
      const Status status = half.record(rec, args);
      CHECK(status.message().find("fp16 output rows are not normalized in segments") != std::string::npos);
    });
  });
}

TEST_CASE("block kernels: a norm whose row statistic overflows float32 writes that row as NaN, not zeros") {
  // Row 1 holds finite values near 1e20: its squares sum past float32, and
  // 1/sqrt(inf) = 0 once normalized it to zeros (LayerNorm: to its bias).
  const uint32_t rows = 3, dim = 64;
  std::mt19937_64 rng(7005);
  for_each_context([&](Context& context) {
    const kernels::KernelPlan plan = kernels::plan_kernels(context.caps());
    for (NormKind kind : {NormKind::rms, NormKind::layer}) {
      INFO("kind " << static_cast<int>(kind));
      std::vector<float> x = normal_values(size_t{rows} * dim, rng, 0.0f, 1.0f);
      for (uint32_t i = 0; i < dim; ++i) x[dim + i] *= 1e20f;
      const std::vector<float> g(dim, 1.0f), b(dim, 0.5f);
      std::vector<uint32_t> w_words;
      for (float v : g) w_words.push_back(test::float_bits(v));
      for (float v : b) w_words.push_back(test::float_bits(v));
      kernels::Norm::Args args;
      args.rows = rows;
      args.dim = dim;
      args.b_offset = dim;
      args.x = args.y = RowRef::contiguous(dim);
      std::vector<uint32_t> x_words(size_t{rows} * dim);
      put_rows(x_words, args.x, rows, dim, x);
      const vk::Buffer x_buffer = test::upload_words(context, x_words, "test X");
      const vk::Buffer w_buffer = test::upload_words(context, w_words, "test norm weights");
      vk::DescriptorArena arena(context);
      const kernels::Norm norm =
          kernels::Norm::create(context, arena, plan, kind, {&x_buffer}, {&w_buffer}, {&x_buffer}).value_or_throw();
      test::run_once(context, [&](vk::CommandRecorder& rec) { norm.record(rec, args).or_throw(); });
      const std::vector<float> y = get_rows(test::download_words(context, x_buffer, 0, x_words.size()), args.y, rows, dim);
      const std::vector<double> expected = kind == NormKind::rms
                                               ? ops::rms_norm(ops::widen(x), dim, ops::widen(g), args.eps)
                                               : ops::layer_norm(ops::widen(x), dim, ops::widen(g), ops::widen(b), args.eps);
      for (uint32_t i = 0; i < rows * dim; ++i) {
        if (i / dim == 1) CHECK(std::isnan(y[i]));
        else CHECK(y[i] == doctest::Approx(expected[i]).epsilon(2e-5).scale(1.0));
      }
    }
  });
}

// ---------------------------------------------------------------------------
// Activation

void check_activation(Context& context, const kernels::KernelPlan& plan, ActivationKind kind, bool gated,
                      uint32_t rows, uint32_t cols, std::mt19937_64& rng) {
  INFO("kind " << static_cast<int>(kind) << ", gated " << gated << ", rows " << rows << ", cols " << cols);
  std::vector<float> gate = normal_values(size_t{rows} * cols, rng, 0.0f, 3.0f);
  const float special[] = {0.0f, -0.0f, 1e-3f, -1e-3f, 30.0f, -30.0f, 100.0f, -100.0f, -5.0f, 1e4f, -1e4f};
  for (size_t i = 0; i < std::min(gate.size(), std::size(special)); ++i) gate[i * 7 % gate.size()] = special[i];
  const std::vector<float> up = normal_values(size_t{rows} * cols, rng);

  // Gated: [gate | up] rows in one buffer (one row stride), the output over the gate.
  kernels::Activation::Args args;
  args.rows = rows;
  args.cols = cols;
  std::vector<uint32_t> in_words, out_words;
  if (gated) {
    args.x = wrapping(rows, 2 * cols, 1, 3);
    args.up = args.x;
    args.up.offset += cols;
    args.out = args.x;
    in_words.assign(extent(args.x, rows, 2 * cols), kSentinel);
    put_rows(in_words, args.up, rows, cols, up);
  } else {
    args.x = RowRef::contiguous(cols, 2);
    args.out = wrapping(rows, cols, 2, 1);
    in_words.assign(extent(args.x, rows, cols), kSentinel);
    out_words.assign(extent(args.out, rows, cols), kSentinel);
  }
  put_rows(in_words, args.x, rows, cols, gate);

  const vk::Buffer in_buffer = test::upload_words(context, in_words, "test activation input");
  const vk::Buffer out_buffer = test::device_words(context, std::max<size_t>(out_words.size(), 1), kSentinel,
                                                   "test activation output");
  const vk::Buffer& out = gated ? in_buffer : out_buffer;
  vk::DescriptorArena arena(context);
  const kernels::Activation activation =
      kernels::Activation::create(context, arena, plan, kind, gated, {&in_buffer}, {&out}).value_or_throw();
  test::run_once(context, [&](vk::CommandRecorder& rec) { activation.record(rec, args).or_throw(); });
  const std::vector<uint32_t>& before = gated ? in_words : out_words;
  const std::vector<uint32_t> after = test::download_words(context, out, 0, before.size());

  const std::vector<double> expected = gated ? ops::gated_activation(kind, ops::widen(gate), ops::widen(up))
                                             : ops::activation(kind, ops::widen(gate));
  check_close(get_rows(after, args.out, rows, cols), expected,
              [&](size_t i) { return 1e-6 + 2e-5 * std::abs(expected[i]); });
  // Gated in place: the up halves (and everything else) survive.
  check_untouched(before, after, args.out, rows, cols);
}

TEST_CASE("block kernels: silu, gelu_tanh and relu, plain and gated, match the float64 reference") {
  std::mt19937_64 rng(7004);
  for_each_context([&](Context& context) {
    const kernels::KernelPlan plan = kernels::plan_kernels(context.caps());
    for (ActivationKind kind : {ActivationKind::silu, ActivationKind::gelu_tanh, ActivationKind::relu})
      for (bool gated : {false, true}) {
        check_activation(context, plan, kind, gated, 1, 127, rng);
        check_activation(context, plan, kind, gated, 5, 300, rng);
        check_activation(context, plan, kind, gated, 17, 1, rng);
        check_activation(context, folded(plan), kind, gated, 9, 70, rng);
      }
  });
}

// ---------------------------------------------------------------------------
// Embedding

void check_embedding(Context& context, const kernels::KernelPlan& plan, WeightType type, uint32_t rows, uint32_t dim,
                     std::mt19937_64& rng) {
  INFO("rows " << rows << ", dim " << dim << ", fp16 " << (type == WeightType::f16));
  const uint32_t vocab = 1000;
  const std::vector<float> table = normal_values(size_t{vocab} * dim, rng);
  kernels::Embedding::Args args;
  args.rows = rows;
  args.dim = dim;
  args.vocab = vocab;
  args.table_offset = 3;
  std::vector<uint32_t> t_words;
  const Weights weights = put_weights(t_words, type, args.table_offset, table);
  t_words.resize(weights.end_word + 2, kSentinel);

  std::vector<uint32_t> ids(rows);
  std::uniform_int_distribution<uint32_t> id(0, vocab - 1);
  const uint32_t special[] = {0, vocab - 1, vocab, 0xFFFFFFFFu, vocab + 5};
  for (uint32_t r = 0; r < rows; ++r) ids[r] = r < std::size(special) ? special[r] : id(rng);
  args.ids = RowRef::ring(2, rows + 1, rows, 1);
  args.out = wrapping(rows, dim, 1, 2);
  std::vector<uint32_t> id_words(extent(args.ids, rows, 1), kSentinel);
  for (uint32_t r = 0; r < rows; ++r) id_words[args.ids.word(r)] = ids[r];
  const std::vector<uint32_t> out_words(extent(args.out, rows, dim), kSentinel);

  const vk::Buffer id_buffer = test::upload_words(context, id_words, "test ids");
  const vk::Buffer t_buffer = test::upload_words(context, t_words, "test table");
  const vk::Buffer out_buffer = test::upload_words(context, out_words, "test embeddings");
  vk::DescriptorArena arena(context);
  const kernels::Embedding embedding =
      kernels::Embedding::create(context, arena, plan, element_type(type), {&id_buffer}, {&t_buffer}, {&out_buffer})
          .value_or_throw();
  test::run_once(context, [&](vk::CommandRecorder& rec) { embedding.record(rec, args).or_throw(); });
  const std::vector<uint32_t> after = test::download_words(context, out_buffer, 0, out_words.size());

  const std::vector<double> expected = ops::embedding(weights.values, dim, ids);
  check_close(get_rows(after, args.out, rows, dim), expected, [](size_t) { return 0.0; });  // a copy: exact
  check_untouched(out_words, after, args.out, rows, dim);
}

TEST_CASE("block kernels: embedding lookup matches the reference, zeros for out-of-range ids") {
  std::mt19937_64 rng(7005);
  for_each_context([&](Context& context) {
    const kernels::KernelPlan plan = kernels::plan_kernels(context.caps());
    for (WeightType type : weight_types(context)) {
      check_embedding(context, plan, type, 5, 1, rng);
      check_embedding(context, plan, type, 17, 3, rng);
      check_embedding(context, plan, type, 9, 513, rng);
      check_embedding(context, folded(plan), type, 12, 300, rng);
    }
  });
}

// ---------------------------------------------------------------------------
// Add

void check_add(Context& context, const kernels::KernelPlan& plan, uint32_t rows, uint32_t cols, bool in_place,
               std::mt19937_64& rng) {
  INFO("rows " << rows << ", cols " << cols << ", in place " << in_place);
  const std::vector<float> a = normal_values(size_t{rows} * cols, rng), b = normal_values(size_t{rows} * cols, rng);
  kernels::Add::Args args;
  args.rows = rows;
  args.cols = cols;
  args.a = wrapping(rows, cols, 2, 1);
  args.b = RowRef::contiguous(cols, 3);
  args.c = in_place ? args.a : RowRef::ring(cols, rows, rows - 1);
  std::vector<uint32_t> a_words(extent(args.a, rows, cols), kSentinel), b_words(extent(args.b, rows, cols), kSentinel);
  put_rows(a_words, args.a, rows, cols, a);
  put_rows(b_words, args.b, rows, cols, b);
  const std::vector<uint32_t> c_words(extent(args.c, rows, cols), kSentinel);

  const vk::Buffer a_buffer = test::upload_words(context, a_words, "test add A");
  const vk::Buffer b_buffer = test::upload_words(context, b_words, "test add B");
  const vk::Buffer c_buffer = test::upload_words(context, c_words, "test add C");
  const vk::Buffer& out = in_place ? a_buffer : c_buffer;
  vk::DescriptorArena arena(context);
  const kernels::Add add =
      kernels::Add::create(context, arena, plan, {&a_buffer}, {&b_buffer}, {&out}).value_or_throw();
  test::run_once(context, [&](vk::CommandRecorder& rec) { add.record(rec, args).or_throw(); });
  const std::vector<uint32_t>& before = in_place ? a_words : c_words;
  const std::vector<uint32_t> after = test::download_words(context, out, 0, before.size());

  std::vector<double> expected(a.size());
  for (size_t i = 0; i < a.size(); ++i) expected[i] = static_cast<double>(a[i] + b[i]);  // one fp32 rounding
  check_close(get_rows(after, args.c, rows, cols), expected, [](size_t) { return 0.0; });
  check_untouched(before, after, args.c, rows, cols);
}

TEST_CASE("block kernels: add of ring-addressed rows, in place and not") {
  std::mt19937_64 rng(7006);
  for_each_context([&](Context& context) {
    const kernels::KernelPlan plan = kernels::plan_kernels(context.caps());
    check_add(context, plan, 1, 1, false, rng);
    check_add(context, plan, 17, 127, true, rng);
    check_add(context, plan, 65, 300, false, rng);
    check_add(context, folded(plan), 9, 70, true, rng);
  });
}

}  // namespace
