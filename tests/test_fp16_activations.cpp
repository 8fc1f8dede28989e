// fp16 activations (StackConfig::activations = f16): the kernels that write
// them (norm, activation: fp16 pairs packed in words, rounded to nearest
// even) and the products that read them (tiled GEMM, matvec, direct; every
// weight encoding) against the float64 reference that rounds the same
// values, with odd widths, rows in rings off the vector alignment, and
// folded grids; the products in both builds (16-bit loads where the device
// has 16-bit storage, unpackHalf2x16 of words on the context that switches
// it off). The stack and the real models run
// them in test_stack.cpp and test_models.cpp.
#include "app_device.hpp"
#include "block_harness.hpp"

#include <attendre/diagnostics.hpp>

#include <doctest/doctest.h>

#include <algorithm>


using namespace attendre;
using namespace attendre::test::block;

namespace {

constexpr uint16_t kPadHalf = 0x7E00;  // an fp16 NaN in the unused half of a row's last word

// Rows of `cols` fp16 values packed two per word under `ref` (which counts
// words); the odd column's partner half is a NaN that no reader may use.
void put_half_rows(std::vector<uint32_t>& words, const RowRef& ref, uint32_t rows, uint32_t cols,
                   std::span<const uint16_t> halves) {
  for (uint32_t r = 0; r < rows; ++r) {
    std::vector<uint16_t> row(halves.begin() + size_t{r} * cols, halves.begin() + size_t{r + 1} * cols);
    if (cols % 2 == 1) row.push_back(kPadHalf);
    put_halves(words, static_cast<uint32_t>(2 * ref.word(r)), row);
  }
}

std::vector<uint16_t> get_half_rows(std::span<const uint32_t> words, const RowRef& ref, uint32_t rows, uint32_t cols) {
  std::vector<uint16_t> halves(size_t{rows} * ((cols + 1) / 2 * 2));
  const size_t width = (cols + 1) / 2 * 2;
  for (uint32_t r = 0; r < rows; ++r)
    for (uint32_t e = 0; e < width; ++e)
      halves[r * width + e] = static_cast<uint16_t>(words[ref.word(r) + e / 2] >> (16 * (e % 2)));
  return halves;
}

// fp32 values as fp16 activations hold them.
std::vector<uint16_t> stored_halves(std::span<const float> values) {
  std::vector<uint16_t> h(values.size());
  for (size_t i = 0; i < values.size(); ++i) h[i] = half::to_stored_half(values[i]);
  return h;
}

// A weight image (fp32 and fp16 from element `float_offset`, 3: off the
// direct kernel's vec4 path; BF16 and block types encoded from kStartByte)
// and the float64 values the kernels decode from it.
struct Image {
  std::vector<uint32_t> words;
  std::vector<double> values;
  uint32_t offset = 0, end_word = 0;
};
Image weight_image(ElementType type, std::span<const float> w, uint32_t float_offset = 3) {
  Image image;
  if (type == ElementType::f32 || type == ElementType::f16) {
    image.offset = float_offset;
    const Weights put = put_weights(image.words, type == ElementType::f16 ? WeightType::f16 : WeightType::f32,
                                    image.offset, w);
    image.values = put.values;
    image.end_word = put.end_word;
    return image;
  }
  Encoded e = encode(type, w);
  return {std::move(e.words), std::move(e.values), start_offset(type), e.end_word};
}

struct ProductCase {
  uint32_t rows, in, out;
  bool ring = false;  // A rows in a wrapping ring at an odd word offset and stride
};

// Which bound an output must keep: the one of the build that runs (fp32
// math, or fp16 products where kernels::half_math picks *_f16_a16_math), or
// the fp32 one whatever runs (to show that the fp16 products are taken).
enum class Bound { of_the_build, fp32_math };

// The extra error of the fp16 products (shaders/half_math.glsl) over one
// output: each group of <= 4 products of fp16 values is summed in fp16,
// products and sums rounded to nearest (unit roundoff u = 2^-11; an FMA
// rounds less), so a group misses its exact sum by at most
// gamma_4 = 4u / (1 - 4u) times its sum of |a * w| (Higham, Accuracy and
// Stability, 3.1); results below fp16's normal range (2^-14) may be flushed
// to zero (Vulkan lets fp16 denormals flush), at most 2^-14 for each of the
// 4 products and 3 sums of a group. The group sums are then added in fp32,
// as the fp32-math build adds products.
double half_products_bound(std::span<const double> a_row, std::span<const double> w_row) {
  const double u = std::ldexp(1.0, -11), gamma4 = 4 * u / (1 - 4 * u);
  double magnitude = 0;
  for (size_t i = 0; i < a_row.size(); ++i) magnitude += std::abs(a_row[i] * w_row[i]);
  const double groups = static_cast<double>((a_row.size() + 3) / 4);
  return gamma4 * magnitude + 7 * std::ldexp(1.0, -14) * groups;
}

// Runs one product over fp16 A rows and returns how many outputs miss the
// float64 product of `a_values` (the rounded A, or on purpose the unrounded
// one), relative to the magnitudes of the row and the weights, plus the
// fp16 products' bound where `bound` and the build say so.
uint32_t product_misses(Context& context, const kernels::KernelPlan& plan, ElementType type, const ProductCase& c,
                        std::span<const uint16_t> a_halves, std::span<const double> a_values, const Image& w,
                        std::span<const float> bias, uint32_t report, Bound bound = Bound::of_the_build) {
  kernels::Matmul::Args args;
  args.rows = c.rows;
  args.in = c.in;
  args.out = c.out;
  args.w_offset = w.offset;
  args.bias = true;
  args.bias_offset = w.end_word + 1;
  std::vector<uint32_t> w_words = w.words;
  w_words.resize(args.bias_offset + c.out + 2, kSentinel);
  for (uint32_t o = 0; o < c.out; ++o) w_words[args.bias_offset + o] = test::float_bits(bias[o]);
  const uint32_t a_row_words = (c.in + 1) / 2;
  args.a = c.ring ? wrapping(c.rows, a_row_words, 1, 3) : RowRef::contiguous(a_row_words, 2);
  args.c = RowRef::contiguous(c.out, 1);
  std::vector<uint32_t> a_words(extent(args.a, c.rows, a_row_words), kSentinel);
  put_half_rows(a_words, args.a, c.rows, c.in, a_halves);
  const std::vector<uint32_t> c_words(extent(args.c, c.rows, c.out), kSentinel);

  const vk::Buffer a_buffer = test::upload_words(context, a_words, "test fp16 A");
  const vk::Buffer w_buffer = test::upload_words(context, w_words, "test W");
  const vk::Buffer c_buffer = test::upload_words(context, c_words, "test C");
  vk::DescriptorArena arena(context);
  const auto matmul = kernels::Matmul::create(context, arena, plan, type, {&a_buffer}, {&w_buffer}, {&c_buffer}, {},
                                              MemoryStorage::f16);
  REQUIRE(matmul.ok());
  test::run_once(context, [&](vk::CommandRecorder& rec) { matmul->record(rec, args).or_throw(); });
  const std::vector<uint32_t> after = test::download_words(context, c_buffer, 0, c_words.size());
  check_untouched(c_words, after, args.c, c.rows, c.out);

  const std::vector<double> expected = ops::matmul(a_values, w.values, c.rows, c.in, c.out, ops::widen(bias));
  auto rms = [](std::span<const double> values) {
    double sum = 0;
    for (double x : values) sum += x * x;
    return std::sqrt(sum / static_cast<double>(std::max<size_t>(values.size(), 1)));
  };
  const bool half_products =
      bound == Bound::of_the_build && type == ElementType::f16 && kernels::half_math(context.caps());
  return count_outside(get_rows(after, args.c, c.rows, c.out), expected, [&](size_t i) {
    const size_t r = i / c.out, o = i % c.out;
    const std::span<const double> a_row = a_values.subspan(r * c.in, c.in);
    const std::span<const double> w_row = std::span(w.values).subspan(o * c.in, c.in);
    const double magnitude = rms(a_row) * rms(w_row);
    return 1e-5 * (std::sqrt(static_cast<double>(c.in)) + 4.0) * magnitude + 1e-6 * std::abs(expected[i]) +
           (half_products ? half_products_bound(a_row, w_row) : 0.0);
  }, report);
}

void check_products(Context& context, ElementType type, const ProductCase& c, std::mt19937_64& rng) {
  INFO(to_string(type) << ": rows " << c.rows << ", in " << c.in << ", out " << c.out << ", ring " << c.ring);
  const std::vector<float> a = normal_values(size_t{c.rows} * c.in, rng);
  const std::vector<float> w = normal_values(size_t{c.out} * c.in, rng), bias = normal_values(c.out, rng);
  const std::vector<uint16_t> halves = stored_halves(a);
  const std::vector<double> rounded = ops::widen_half(halves);
  const Image image = weight_image(type, w);
  const kernels::KernelPlan plan = kernels::plan_kernels(context.caps());
  for (bool direct : {false, true}) {
    INFO((direct ? "direct" : c.rows <= kernels::kMatvecMaxRows ? "matvec" : "tiled GEMM"));
    CHECK(product_misses(context, with_style(plan, direct), type, c, halves, rounded, image, bias, 3) == 0);
  }
  CHECK(product_misses(context, folded(plan), type, c, halves, rounded, image, bias, 3) == 0);
}

// The one kernel_variants line of `family` on `context`.
KernelVariant variant_line(const Context& context, const std::string& family) {
  const std::vector<KernelVariant> all = kernel_variants(context);
  const auto count = std::count_if(all.begin(), all.end(), [&](const KernelVariant& v) { return v.family == family; });
  REQUIRE(count == 1);
  return *std::find_if(all.begin(), all.end(), [&](const KernelVariant& v) { return v.family == family; });
}

// The products over fp16 A on `context` are the build the fp16 weights'
// path picks (f16_as_words): *_a16 by 16-bit loads, or *_a16_words, and
// over fp16 weights *_f16_a16_math where kernels::half_math; and the
// "fp16 activations" line of kernel_variants says so. Returns whether the
// words build runs.
bool check_a16_build(const Context& context, ElementType type) {
  const bool words = kernels::f16_as_words(context.caps());
  const bool math = type == ElementType::f16 && kernels::half_math(context.caps());
  const std::string suffix = words ? "_a16_words" : math ? "_a16_math" : "_a16";
  for (kernels::WeightKernel kernel :
       {kernels::WeightKernel::gemm, kernels::WeightKernel::matvec, kernels::WeightKernel::direct}) {
    const Result<kernels::ShaderId> shader = kernels::weight_variant(context, kernel, type, "W", MemoryStorage::f16);
    REQUIRE(shader.ok());
    CHECK(std::string(shaders::name(*shader)).ends_with(suffix));
  }
  CHECK(variant_line(context, "fp16 activations")
            .variant.starts_with(words ? "unpackHalf2x16 of 32-bit words" : "16-bit loads"));
  return words;
}

}  // namespace

TEST_CASE("fp16 activations: products read packed fp16 rows on every path and weight encoding") {
  std::mt19937_64 rng(9101);
  // gpu() and tiny_gpu() read A by 16-bit loads where the device has 16-bit
  // storage (ATTENDRE_DISABLE=16bit takes it away), tiny_words_gpu() as words.
  bool words_ran = false, loads_ran = false;
  for_each_context([&](Context& context) {
    // Rows 1 and 4 take matvec, the rest the GEMM; widths odd (the last
    // word's NaN partner is never read), outputs off every tile.
    for (ElementType type : {ElementType::f32, ElementType::f16, ElementType::bf16}) {
      check_products(context, type, {1, 127, 65, true}, rng);
      check_products(context, type, {4, 64, 7}, rng);
      check_products(context, type, {5, 300, 130, true}, rng);
      check_products(context, type, {67, 33, 64}, rng);
    }
    for (ElementType type : {ElementType::q8_0, ElementType::q4_0, ElementType::q4_k, ElementType::q6_k}) {
      const uint32_t block = element_block(type).values;
      check_products(context, type, {2, 2 * block, 33, true}, rng);
      check_products(context, type, {17, block, 65}, rng);
    }
    for (ElementType type : {ElementType::f32, ElementType::f16, ElementType::bf16, ElementType::q4_k})
      (check_a16_build(context, type) ? words_ran : loads_ran) = true;
  }, {&test::gpu(), &test::tiny_gpu(), &test::tiny_words_gpu()});
  CHECK(words_ran);
  if (test::gpu().caps().storage_16bit) CHECK(loads_ran);  // lavapipe, unless ATTENDRE_DISABLE=16bit
}

TEST_CASE("fp16 activations: Q8_0 weights by int8 loads and as words, over A by 16-bit loads and as words") {
  // The four builds of each Q8_0 product over fp16 A (*_q8_0[_int8]_a16[_words]),
  // each on a context that picks it: 8-bit and 16-bit storage on or off, the
  // quirks that prefer words cleared.
  std::mt19937_64 rng(9103);
  for (const bool int8 : {true, false})
    for (const bool halves : {true, false}) {
      ContextOptions options;
      options.prefer_half_loads = options.prefer_byte_loads = true;
      options.limits = LimitOverrides{32u, 1536u, std::nullopt};  // small sizes cross many tiles
      options.disabled_features = FeatureSet{};
      if (!int8) options.disabled_features->add(Feature::storage_8bit);
      if (!halves) options.disabled_features->add(Feature::storage_16bit);
      auto context_owner = Context::create(options).value_or_throw();
      Context& context = *context_owner;
      const DeviceCaps& caps = context.caps();
      const bool int8_loads = kernels::q8_0_as_int8(caps), half_words = kernels::f16_as_words(caps);
      CHECK(int8_loads == (int8 && caps.storage_8bit));
      CHECK(half_words == !(halves && caps.storage_16bit));
      const std::string suffix =
          std::string(int8_loads ? "_q8_0_int8" : "_q8_0") + (half_words ? "_a16_words" : "_a16");
      INFO("builds *" << suffix);
      for (const auto& [kernel, name] : {std::pair{kernels::WeightKernel::gemm, "matmul"},
                                         std::pair{kernels::WeightKernel::matvec, "matvec"},
                                         std::pair{kernels::WeightKernel::direct, "matmul_direct"}}) {
        const Result<kernels::ShaderId> shader =
            kernels::weight_variant(context, kernel, ElementType::q8_0, "W", MemoryStorage::f16);
        REQUIRE(shader.ok());
        CHECK(std::string(shaders::name(*shader)) == name + suffix);
      }
      // Rows 2 and 4 take matvec; A rows in a ring at odd words; outputs off every tile.
      for (const ProductCase& c : {ProductCase{2, 64, 33, true}, ProductCase{4, 32, 7}, ProductCase{17, 96, 65, true},
                                   ProductCase{67, 64, 40}})
        check_products(context, ElementType::q8_0, c, rng);
      test::check_no_validation_messages(context);
    }
}

TEST_CASE("fp16 activations: an adopted device uses the 16-bit and 8-bit storage and shaderFloat16 its application "
          "enabled, and nothing it did not") {
  // The application's own device (test::App), its validation reporting to
  // the application: created with 16-bit and 8-bit storage and shaderFloat16
  // where present, attendre runs the *_a16, *_q8_0_int8_a16 and
  // *_f16_a16_math builds on it; created without them, the words builds and
  // fp32 math, since it may use nothing the application did not enable.
  std::mt19937_64 rng(9106);
  for (const bool enabled : {true, false}) {
    INFO("application enabled 16-bit, 8-bit storage and shaderFloat16: " << enabled);
    test::App app(enabled);
    ExternalDevice external = app.external();
    external.prefer_half_loads = external.prefer_byte_loads = external.prefer_half_math = true;
    external.disabled_features = FeatureSet{};  // none switched off, whatever ATTENDRE_DISABLE says
    auto context_owner = Context::adopt(external).value_or_throw();
    Context& context = *context_owner;
    const DeviceCaps& caps = context.caps();
    CHECK(caps.storage_16bit == app.storage_16bit);
    CHECK(caps.storage_8bit == app.storage_8bit);
    CHECK(caps.float16 == app.float16);
    if (enabled) {
      // lavapipe has all three, so there the enabled builds do run.
      const bool lavapipe = caps.type == VK_PHYSICAL_DEVICE_TYPE_CPU && caps.name.rfind("llvmpipe", 0) == 0;
      if (lavapipe) CHECK((app.storage_16bit && app.storage_8bit && app.float16));
      else MESSAGE("not lavapipe: 16-bit storage " << app.storage_16bit << ", 8-bit storage " << app.storage_8bit
                                                   << ", shaderFloat16 " << app.float16);
    } else {
      CHECK_FALSE((caps.storage_16bit || caps.storage_8bit || caps.float16));
    }
    using kernels::WeightKernel;
    const std::string q8_0(shaders::name(
        kernels::weight_variant(context, WeightKernel::matvec, ElementType::q8_0, "W", MemoryStorage::f16).value()));
    CHECK(q8_0 == std::string("matvec_q8_0") + (caps.storage_8bit ? "_int8" : "") +
                      (caps.storage_16bit ? "_a16" : "_a16_words"));
    const std::string f16(shaders::name(
        kernels::weight_variant(context, WeightKernel::gemm, ElementType::f16, "W", MemoryStorage::f16).value()));
    CHECK(f16 == (!caps.storage_16bit ? "matmul_f16_words_a16_words"
                  : caps.float16      ? "matmul_f16_a16_math"
                                      : "matmul_f16_a16"));
    for (const ProductCase& c : {ProductCase{2, 64, 33, true}, ProductCase{67, 96, 40}})
      check_products(context, ElementType::q8_0, c, rng);
    for (const ProductCase& c : {ProductCase{4, 37, 9, true}, ProductCase{70, 301, 66}})
      check_products(context, ElementType::f16, c, rng);
    app.check_no_messages();
  }
}

TEST_CASE("fp16 activations: the product comparison rejects an unrounded A, so the rounding is what is read") {
  // The float64 product of the fp32 A (not rounded to fp16) differs from the
  // kernel's by ~2^-12 of each term, far past the fp32 tolerance.
  std::mt19937_64 rng(9102);
  Context& context = test::gpu();
  const ProductCase c{5, 300, 40};
  const std::vector<float> a = normal_values(size_t{c.rows} * c.in, rng);
  const std::vector<float> w = normal_values(size_t{c.out} * c.in, rng), bias = normal_values(c.out, rng);
  const std::vector<uint16_t> halves = stored_halves(a);
  const Image image = weight_image(ElementType::f32, w);
  const kernels::KernelPlan plan = kernels::plan_kernels(context.caps());
  CHECK(product_misses(context, plan, ElementType::f32, c, halves, ops::widen_half(halves), image, bias, 3) == 0);
  CHECK(product_misses(context, plan, ElementType::f32, c, halves, ops::widen(a), image, bias, 0) > c.rows * c.out / 2);
  test::check_no_validation_messages(context);
}

TEST_CASE("fp16 activations: fp16 math multiplies fp16 rows by fp16 weights in fp16 within the derived bound") {
  // gpu() prefers fp16 math: where shaderFloat16 and 16-bit loads are in
  // use, fp16 A x fp16 W runs *_f16_a16_math on every path, and each output
  // keeps the fp32 bound plus half_products_bound. Widths not a multiple of
  // 4 (tail groups), below 4, and rows off the vector alignment; a GEMM
  // crossing row and output tiles, and folded grids (check_products).
  std::mt19937_64 rng(9104);
  Context& context = test::gpu();
  const bool math = kernels::half_math(context.caps());
  if (!math) MESSAGE("no fp16 math on this context (shaderFloat16 or 16-bit loads not in use): fp32 math checked");
  check_a16_build(context, ElementType::f16);
  CHECK(variant_line(context, "shaderFloat16")
            .variant.starts_with(math ? "fp16 products in groups of 4, fp32 sums" : "fp32 math"));
  for (const ProductCase& c : {ProductCase{1, 3, 5}, ProductCase{4, 2, 9, true}, ProductCase{6, 1030, 17, true},
                               ProductCase{70, 37, 133}, ProductCase{3, 301, 66}})
    check_products(context, ElementType::f16, c, rng);

  // The bound is not idle: the fp32-math bound rejects the fp16 products of
  // normal values on every path (each group's sum rounds by up to 2^-12 of
  // its size, far past the fp32 bound), while the derived bound holds them.
  // W from element 4, A rows aligned: the direct kernel's vec4 path.
  if (!math) return;
  const kernels::KernelPlan plan = kernels::plan_kernels(context.caps());
  for (const auto& [c, direct] : {std::pair{ProductCase{5, 300, 40}, false}, std::pair{ProductCase{3, 300, 40}, false},
                                  std::pair{ProductCase{5, 300, 40}, true}}) {
    INFO(std::string(direct ? "direct" : c.rows <= kernels::kMatvecMaxRows ? "matvec" : "tiled GEMM"));
    const std::vector<float> a = normal_values(size_t{c.rows} * c.in, rng);
    const std::vector<float> w = normal_values(size_t{c.out} * c.in, rng), bias = normal_values(c.out, rng);
    const std::vector<uint16_t> halves = stored_halves(a);
    const Image image = weight_image(ElementType::f16, w, 4);
    const std::vector<double> rounded = ops::widen_half(halves);
    CHECK(product_misses(context, with_style(plan, direct), ElementType::f16, c, halves, rounded, image, bias, 3) == 0);
    CHECK(product_misses(context, with_style(plan, direct), ElementType::f16, c, halves, rounded, image, bias, 0,
                         Bound::fp32_math) > 0);
  }
  test::check_no_validation_messages(context);
}

TEST_CASE("fp16 activations: fp16 math switched off, 16-bit loads of fp16 rows and weights multiply in fp32") {
  // The *_a16 builds over fp16 weights (gpu() runs the fp16-math ones):
  // float16 switched off, fp32 math within the fp32 bound; the variants
  // line names the switch.
  std::mt19937_64 rng(9105);
  Context& context = test::half_loads_fp32_math_gpu();
  CHECK_FALSE(kernels::half_math(context.caps()));
  check_a16_build(context, ElementType::f16);
  CHECK(variant_line(context, "shaderFloat16").reason == "float16 switched off");
  for (const ProductCase& c : {ProductCase{1, 127, 65, true}, ProductCase{5, 301, 66}, ProductCase{67, 33, 64}})
    check_products(context, ElementType::f16, c, rng);
  test::check_no_validation_messages(context);
}

namespace {

// Each fp16 written equals the rounded float64 value, or its neighbour where
// the fp32 result sits within fp32 error of a rounding boundary (rare: a few
// in 10^4); the padding half of an odd row is +0.
void check_halves(std::span<const uint16_t> actual, std::span<const double> expected, uint32_t rows, uint32_t cols,
                  double relative) {
  const size_t width = (cols + 1) / 2 * 2;
  uint32_t exact = 0, near = 0, wrong = 0;
  for (uint32_t r = 0; r < rows; ++r) {
    for (uint32_t e = 0; e < cols; ++e) {
      const double x = expected[size_t{r} * cols + e];
      const uint16_t got = actual[r * width + e], want = half::to_stored_half(static_cast<float>(x));
      if (got == want) ++exact;
      else if (std::abs(double(half::half_to_float(got)) - x) <= std::abs(x) * (std::ldexp(1.0, -11) + relative) + 1e-6)
        ++near;
      else if (wrong++ < 3)
        FAIL_CHECK("row " << r << " element " << e << ": expected " << x << " (fp16 " << want << "), got fp16 " << got);
    }
    if (cols % 2 == 1) CHECK(actual[r * width + cols] == 0);
  }
  CHECK(wrong == 0);
  CHECK(near * 100 <= exact + near);  // the boundary cases stay rare
}

}  // namespace

TEST_CASE("fp16 activations: norm and activation write fp16 pairs rounded as the reference rounds") {
  std::mt19937_64 rng(9103);
  for_each_context([&](Context& context) {
    const kernels::KernelPlan plan = kernels::plan_kernels(context.caps());
    for (const auto& [kind, rows, dim] : {std::tuple{NormKind::rms, 3u, 127u}, std::tuple{NormKind::layer, 17u, 300u},
                                          std::tuple{NormKind::rms, 65u, 1u}, std::tuple{NormKind::layer, 2u, 1025u}}) {
      INFO("norm " << static_cast<int>(kind) << ", rows " << rows << ", dim " << dim);
      const std::vector<float> x = normal_values(size_t{rows} * dim, rng, 0.5f, 2.0f);
      const std::vector<float> g = normal_values(dim, rng, 1.0f, 0.2f), b = normal_values(dim, rng, 0.0f, 0.5f);
      kernels::Norm::Args args{rows, dim, 1e-5f, 2, 2 + dim, wrapping(rows, dim, 1, 2), wrapping(rows, (dim + 1) / 2, 1, 3)};
      std::vector<uint32_t> w_words(args.b_offset + dim, kSentinel), x_words(extent(args.x, rows, dim), kSentinel);
      for (uint32_t i = 0; i < dim; ++i) {
        w_words[args.g_offset + i] = test::float_bits(g[i]);
        w_words[args.b_offset + i] = test::float_bits(b[i]);
      }
      put_rows(x_words, args.x, rows, dim, x);
      const std::vector<uint32_t> y_words(extent(args.y, rows, (dim + 1) / 2), kSentinel);
      const vk::Buffer x_buffer = test::upload_words(context, x_words, "test X");
      const vk::Buffer w_buffer = test::upload_words(context, w_words, "test norm weights");
      const vk::Buffer y_buffer = test::upload_words(context, y_words, "test fp16 Y");
      vk::DescriptorArena arena(context);
      const auto norm = kernels::Norm::create(context, arena, plan, kind, {&x_buffer}, {&w_buffer}, {&y_buffer},
                                              MemoryStorage::f16);
      REQUIRE(norm.ok());
      test::run_once(context, [&](vk::CommandRecorder& rec) { norm->record(rec, args).or_throw(); });
      const std::vector<uint32_t> after = test::download_words(context, y_buffer, 0, y_words.size());
      check_untouched(y_words, after, args.y, rows, (dim + 1) / 2);
      const std::vector<double> expected =
          kind == NormKind::rms ? ops::rms_norm(ops::widen(x), dim, ops::widen(g), args.eps)
                                : ops::layer_norm(ops::widen(x), dim, ops::widen(g), ops::widen(b), args.eps);
      check_halves(get_half_rows(after, args.y, rows, dim), expected, rows, dim, 2e-5);
    }
    for (ActivationKind kind : {ActivationKind::silu, ActivationKind::gelu_tanh, ActivationKind::relu})
      for (bool gated : {false, true})
        for (const auto& [rows, cols] : {std::pair{5u, 301u}, std::pair{17u, 64u}}) {
          INFO("activation " << static_cast<int>(kind) << ", gated " << gated << ", rows " << rows << ", cols " << cols);
          const std::vector<float> gate = normal_values(size_t{rows} * cols, rng, 0.0f, 3.0f);
          const std::vector<float> up = normal_values(size_t{rows} * cols, rng);
          kernels::Activation::Args args;
          args.rows = rows;
          args.cols = cols;
          args.x = wrapping(rows, 2 * cols, 1, 3);
          args.up = args.x;
          args.up.offset += cols;
          args.out = wrapping(rows, (cols + 1) / 2, 2, 1);
          std::vector<uint32_t> in_words(extent(args.x, rows, 2 * cols), kSentinel);
          put_rows(in_words, args.x, rows, cols, gate);
          put_rows(in_words, args.up, rows, cols, up);
          const std::vector<uint32_t> out_words(extent(args.out, rows, (cols + 1) / 2), kSentinel);
          const vk::Buffer in_buffer = test::upload_words(context, in_words, "test activation input");
          const vk::Buffer out_buffer = test::upload_words(context, out_words, "test fp16 activation output");
          vk::DescriptorArena arena(context);
          const auto activation = kernels::Activation::create(context, arena, folded(plan), kind, gated, {&in_buffer},
                                                              {&out_buffer}, MemoryStorage::f16);
          REQUIRE(activation.ok());
          test::run_once(context, [&](vk::CommandRecorder& rec) { activation->record(rec, args).or_throw(); });
          const std::vector<uint32_t> after = test::download_words(context, out_buffer, 0, out_words.size());
          check_untouched(out_words, after, args.out, rows, (cols + 1) / 2);
          // GELU from ggml's fp16 table: where fp32 and float64 round gelu
          // at the table's point apart, one more fp16 step.
          const std::vector<double> expected = ops::fp16_activation(kind, gated, ops::widen(gate), ops::widen(up));
          const double relative = kind == ActivationKind::gelu_tanh ? std::ldexp(1.0, -10) : 2e-5;
          check_halves(get_half_rows(after, args.out, rows, cols), expected, rows, cols, relative);
        }
  });
}

TEST_CASE("fp16 activations: fp16 rows are never written in place, and embeddings read none") {
  Context& context = test::gpu();
  const kernels::KernelPlan plan = kernels::plan_kernels(context.caps());
  vk::DescriptorArena arena(context);
  const vk::Buffer rows = test::device_words(context, 64, 0, "test rows"), w = test::device_words(context, 64, 0, "test W");
  const auto norm = kernels::Norm::create(context, arena, plan, NormKind::rms, {&rows}, {&w}, {&rows}, MemoryStorage::f16);
  REQUIRE_FALSE(norm.ok());
  CHECK(norm.status().message() == "norm: fp16 output rows cannot be written in place");
  const auto activation = kernels::Activation::create(context, arena, plan, ActivationKind::silu, false, {&rows}, {&rows},
                                                      MemoryStorage::f16);
  REQUIRE_FALSE(activation.ok());
  CHECK(activation.status().message() == "activation: fp16 output rows cannot be written in place");
  const auto embedding =
      kernels::weight_variant(context, kernels::WeightKernel::embedding, ElementType::f32, "table", MemoryStorage::f16);
  CHECK_FALSE(embedding.ok());
  test::check_no_validation_messages(context);
}
