// Weights in BF16 and every GGUF block type, decoded inside the kernels that
// read them (tiled GEMM, matvec, direct, embedding lookup), against the
// float64 product with the values the CPU reference codec (lib/gguf/quant.*)
// decodes from the same bytes: odd row counts, rows of many blocks, outputs
// off every tile, bias and residual, blocks straddling 32-bit words (every
// matrix starts half a word in), misaligned A rows (rings), folded grids,
// embedding tables split by rows. Each path is forced through the kernel
// plan, whatever the device prefers. Whole models in every type, fixtures
// and the shared real files, run in test_models.cpp and
// test_stack_resources.cpp.
#include "block_harness.hpp"

#include <doctest/doctest.h>


using namespace attendre;
using namespace attendre::test::block;

namespace {

constexpr ElementType kTypes[] = {ElementType::bf16, ElementType::q8_0, ElementType::q4_0,
                                  ElementType::q4_1, ElementType::q5_0, ElementType::q5_1,
                                  ElementType::q4_k, ElementType::q5_k, ElementType::q6_k};

struct Case {
  uint32_t rows, blocks, out;  // `in` is `blocks` blocks
  bool bias = false, residual = false, ring = false;
};

// Runs one product and returns how many outputs miss the float64 product
// with `reference` (the decoded weights): fp32 accumulation over `in`
// products, relative to the magnitude of the output's row and weights.
// `report` mismatches fail the test by name.
uint32_t mismatches(Context& context, const kernels::KernelPlan& plan, ElementType type, const Case& c,
                    std::span<const float> a, const Encoded& w, std::span<const double> reference,
                    std::span<const float> bias, std::span<const float> residual, uint32_t report,
                    bool* texel = nullptr) {
  const uint32_t in = c.blocks * element_block(type).values;
  kernels::Matmul::Args args;
  args.rows = c.rows;
  args.in = in;
  args.out = c.out;
  args.w_offset = w.offset;
  args.bias = c.bias;
  args.bias_offset = w.end_word + 1;
  args.residual = c.residual;
  std::vector<uint32_t> w_words = w.words;
  w_words.resize(args.bias_offset + c.out + 2, kSentinel);
  for (uint32_t o = 0; o < c.out; ++o) w_words[args.bias_offset + o] = test::float_bits(bias[o]);
  // Rings put A rows off vec4 boundaries (the direct kernel's scalar path).
  args.a = c.ring ? wrapping(c.rows, in, 1, 3) : RowRef::contiguous(in);
  args.c = c.ring ? wrapping(c.rows, c.out, 2, 1) : RowRef::contiguous(c.out, 4);
  args.r = args.c;
  std::vector<uint32_t> a_words(extent(args.a, c.rows, in), kSentinel);
  put_rows(a_words, args.a, c.rows, in, a);
  std::vector<uint32_t> c_words(extent(args.c, c.rows, c.out), kSentinel);
  if (c.residual) put_rows(c_words, args.c, c.rows, c.out, residual);

  const vk::Buffer a_buffer = test::upload_words(context, a_words, "test A");
  const vk::Buffer w_buffer = test::upload_words(context, w_words, "test W");
  const vk::Buffer c_buffer = test::upload_words(context, c_words, "test C");
  vk::DescriptorArena arena(context);
  const kernels::Matmul matmul =
      kernels::Matmul::create(context, arena, plan, type, {&a_buffer}, {&w_buffer}, {&c_buffer}).value_or_throw();
  if (texel) *texel = matmul.texel();
  test::run_once(context, [&](vk::CommandRecorder& rec) { matmul.record(rec, args).or_throw(); });
  const std::vector<uint32_t> after = test::download_words(context, c_buffer, 0, c_words.size());
  check_untouched(c_words, after, args.c, c.rows, c.out);

  const std::vector<double> expected =
      ops::matmul(ops::widen(a), reference, c.rows, in, c.out, c.bias ? ops::widen(bias) : std::vector<double>{},
                  c.residual ? ops::widen(residual) : std::vector<double>{});
  auto rms = [](auto values) {
    double sum = 0;
    for (auto x : values) sum += double(x) * double(x);
    return std::sqrt(sum / static_cast<double>(values.size()));
  };
  return count_outside(get_rows(after, args.c, c.rows, c.out), expected, [&](size_t i) {
    const size_t r = i / c.out, o = i % c.out;
    const double magnitude = rms(a.subspan(r * in, in)) * rms(reference.subspan(o * in, in));
    return 1e-5 * (std::sqrt(static_cast<double>(in)) + 4.0) * magnitude + 1e-6 * std::abs(expected[i]);
  }, report);
}

void check_paths(Context& context, const kernels::KernelPlan& plan, ElementType type, const Case& c,
                 std::mt19937_64& rng) {
  const uint32_t in = c.blocks * element_block(type).values;
  INFO(to_string(type) << ": rows " << c.rows << ", in " << in << ", out " << c.out << ", bias " << c.bias
                       << ", residual " << c.residual << ", ring " << c.ring);
  const std::vector<float> a = normal_values(size_t{c.rows} * in, rng), w = normal_values(size_t{c.out} * in, rng);
  const std::vector<float> bias = normal_values(c.out, rng), residual = normal_values(size_t{c.rows} * c.out, rng);
  const Encoded e = encode(type, w);
  for (bool direct : {false, true}) {
    INFO((direct ? "direct" : c.rows <= kernels::kMatvecMaxRows ? "matvec" : "tiled GEMM"));
    CHECK(mismatches(context, with_style(plan, direct), type, c, a, e, e.values, bias, residual, 3) == 0);
  }
}

TEST_CASE("block kernels: quantized matmul, matvec and direct products match the float64 dequantized product") {
  std::mt19937_64 rng(9001);
  Context& context = test::gpu();
  const kernels::KernelPlan plan = kernels::plan_kernels(context.caps());
  // Rows 1, 3, 4 take the matvec path; outputs off every tile and workgroup.
  const Case cases[] = {{1, 9, 513, true},       {3, 2, 65, false, true, true}, {4, 1, 7, true, true},
                        {5, 3, 130, false, false, true}, {17, 5, 33, true, false}, {65, 2, 70, false, true},
                        {130, 3, 129, true, true, true}};
  for (ElementType type : kTypes) {
    for (const Case& c : cases) check_paths(context, plan, type, c, rng);
    check_paths(context, folded(plan), type, {2, 4, 65, true, true, true}, rng);
    check_paths(context, folded(plan), type, {70, 2, 40, true, false}, rng);
  }
  test::check_no_validation_messages(context);
}

// The direct kernel (matmul_direct.comp) in register tiles of every shape:
// rows and outputs per invocation, A shared by subgroup shuffles or loaded
// by each lane (SHARE 1), over rows off the tile's rows, outputs off
// W x OUTS, and `in` off the shared chunk (4 x SHARE values: the kernel's
// tail loop); float weights both vec4-aligned (vector loads) and not; the
// weights read through a uniform texel buffer (the *_texel builds, where
// the device has them) and through storage-buffer loads (texel switched off).
TEST_CASE("block kernels: the direct kernel's register tiles match the float64 product in every encoding") {
  std::mt19937_64 rng(9003);
  ContextOptions options;
  options.disabled_features = FeatureSet{}.add(Feature::texel_buffers);
  auto storage_owner = Context::create(options).value_or_throw();
  for (Context* context_ptr : {&test::gpu(), storage_owner.get()}) {
  Context& context = *context_ptr;
  const bool texel_expected = context.caps().texel_buffers;
  CHECK(texel_expected == (context_ptr == &test::gpu()));  // lavapipe has them; switched off, none
  INFO((texel_expected ? "texel-buffer weights" : "storage-buffer weights"));
  const kernels::KernelPlan device = with_style(kernels::plan_kernels(context.caps()), true);
  REQUIRE(device.direct_share > 1);  // a CPU device (lavapipe): subgroup shuffles of a fixed size
  struct Tile {
    uint32_t rows, outputs, share;
  };
  const Tile tiles[] = {{1, 1, 1}, {3, 5, 1}, {8, 2, device.direct_share}, {5, 3, device.direct_share},
                        {16, 1, device.direct_share}};
  const ElementType types[] = {ElementType::f32,  ElementType::f16,  ElementType::bf16, ElementType::q8_0,
                               ElementType::q4_0, ElementType::q4_k, ElementType::q6_k};
  for (ElementType type : types) {
    const bool floats = element_block(type).values == 1;
    // `in` values: for float types 100 (whole quads, not whole chunks), 96
    // (whole chunks), 45 (odd); block types 1 to 3 blocks.
    const Case cases[] = {{1, floats ? 100u : 2u, 37, true},
                          {2, floats ? 96u : 1u, 70, false, true},
                          {19, floats ? 100u : 3u, 129, true, true, false},
                          {9, floats ? 45u : 2u, 65, false, false, true}};
    for (const Tile& tile : tiles) {
      kernels::KernelPlan plan = device;
      plan.direct_share = tile.share;
      plan.direct_float_rows = plan.direct_block_rows = tile.rows;
      plan.direct_float_outputs = plan.direct_block_outputs = tile.outputs;
      plan.direct_few_float_outputs = plan.direct_few_block_outputs = tile.outputs;
      for (const Case& c : cases)
        for (const uint32_t start : {floats ? 3 * element_block(type).bytes : kStartByte, 16u}) {  // element 3 or 4, 8
          if (!floats && start != kStartByte) continue;
          const uint32_t in = c.blocks * element_block(type).values;
          INFO(to_string(type) << ": tile " << tile.rows << " x " << tile.outputs << ", share " << tile.share << ", rows "
                               << c.rows << ", in " << in << ", out " << c.out << ", ring " << c.ring << ", byte " << start);
          const std::vector<float> a = normal_values(size_t{c.rows} * in, rng), w = normal_values(size_t{c.out} * in, rng);
          const std::vector<float> bias = normal_values(c.out, rng), residual = normal_values(size_t{c.rows} * c.out, rng);
          const Encoded e = encode(type, w, start);
          bool texel = !texel_expected;
          CHECK(mismatches(context, plan, type, c, a, e, e.values, bias, residual, 3, &texel) == 0);
          CHECK(texel == texel_expected);
        }
    }
  }
  test::check_no_validation_messages(context);
  }
}

// Texel views only where the device can make them, of the weights and of
// A: never of a borrowed buffer (its usage is the application's), at an
// offset off the device's texel alignment, or with texel buffers switched off.
TEST_CASE("block kernels: direct products take texel-buffer weights and A only where both views can be made") {
  Context& context = test::gpu();
  const DeviceCaps& caps = context.caps();
  REQUIRE(caps.texel_buffers);
  const vk::Buffer owned = test::upload_words(context, std::vector<uint32_t>(1024, 0), "test W");
  const vk::Buffer borrowed = vk::Buffer::borrow(owned.handle(), owned.size(), "borrowed W");
  using kernels::texel_weights;
  const vk::BufferBinding a{&owned, 256, 1000};
  const std::optional<kernels::TexelWeights> f16 = texel_weights(caps, ElementType::f16, MemoryStorage::f32, {&owned}, a);
  REQUIRE(f16);
  CHECK(f16->shader == kernels::ShaderId::matmul_direct_f16_texel);
  CHECK(f16->weights.texel_format == VK_FORMAT_R16G16B16A16_SFLOAT);
  CHECK(f16->weights.range == owned.size() / 8 * 8);
  CHECK(f16->a.texel_format == VK_FORMAT_R32G32B32A32_SFLOAT);
  CHECK(f16->a.offset == 256);
  CHECK(f16->a.range == 992);  // whole quads of the range
  CHECK(texel_weights(caps, ElementType::q4_k, MemoryStorage::f32, {&owned}, a)->weights.texel_format == VK_FORMAT_R32_UINT);
  CHECK_FALSE(texel_weights(caps, ElementType::f32, MemoryStorage::f32, {&borrowed}, a));
  CHECK_FALSE(texel_weights(caps, ElementType::f32, MemoryStorage::f32, {&owned}, {&borrowed}));
  CHECK_FALSE(texel_weights(caps, ElementType::f32, MemoryStorage::f16, {&owned}, a));  // fp16 A rows: not built
  if (caps.texel_alignment > 1) {
    CHECK_FALSE(texel_weights(caps, ElementType::f32, MemoryStorage::f32, {&owned, caps.texel_alignment / 2}, a));
    CHECK_FALSE(texel_weights(caps, ElementType::f32, MemoryStorage::f32, {&owned}, {&owned, caps.texel_alignment / 2}));
  }
  DeviceCaps off = caps;
  off.texel_buffers = false;
  CHECK_FALSE(texel_weights(off, ElementType::f32, MemoryStorage::f32, {&owned}, a));
  const Result<vk::BufferBinding> refused = vk::BufferBinding{&borrowed}.texel_view(caps, VK_FORMAT_R32_UINT);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.status().message().find("borrowed") != std::string::npos);
}

TEST_CASE("block kernels: the quantized comparison rejects weights decoded with their nibbles swapped") {
  std::mt19937_64 rng(9002);
  Context& context = test::gpu();
  const kernels::KernelPlan plan = kernels::plan_kernels(context.caps());
  const Case c{1, 2, 3};
  const std::vector<float> a = normal_values(64, rng), w = normal_values(192, rng), none(3);
  Encoded e = encode(ElementType::q4_0, w);
  // The device decodes these bytes; the reference decodes them with the
  // nibbles of one byte of row 0 swapped, as a decoder reading them in the
  // wrong order would.
  std::vector<std::byte> swapped = e.bytes;
  size_t at = 2;  // first byte of nibbles of block 0
  while (at < 18 && (uint8_t(swapped[at]) >> 4) == (uint8_t(swapped[at]) & 15)) ++at;
  REQUIRE(at < 18);
  swapped[at] = std::byte(uint8_t((uint8_t(swapped[at]) << 4) | (uint8_t(swapped[at]) >> 4)));
  const std::vector<double> wrong = gguf::dequantize(gguf::TensorType::q4_0, swapped).value_or_throw();
  for (bool direct : {false, true}) {
    CHECK(mismatches(context, with_style(plan, direct), ElementType::q4_0, c, a, e, e.values, none, none, 3) == 0);
    CHECK(mismatches(context, with_style(plan, direct), ElementType::q4_0, c, a, e, wrong, none, none, 0) == 1);
  }
  test::check_no_validation_messages(context);
}

// ---------------------------------------------------------------------------
// Embedding

// A table of `vocab` rows looked up whole, or (split > 0) as two parts, rows
// [0, split) and [split, vocab), each its own kernel over its own range of
// the binding, the second starting at the byte (or element) where its first
// row lies: the way the stack splits tables past one storage range.
void check_embedding(Context& context, const kernels::KernelPlan& plan, ElementType type, uint32_t rows,
                     uint32_t blocks, uint32_t split, std::mt19937_64& rng) {
  const uint32_t vocab = 37, dim = blocks * element_block(type).values;
  INFO(to_string(type) << ": rows " << rows << ", dim " << dim << ", split at " << split);
  const Encoded table = encode(type, normal_values(size_t{vocab} * dim, rng));
  std::vector<uint32_t> ids(rows);
  const uint32_t special[] = {vocab - 1, 0, vocab, 0xFFFFFFFFu, split, split - 1};
  std::uniform_int_distribution<uint32_t> id(0, vocab - 1);
  for (uint32_t r = 0; r < rows; ++r) ids[r] = r < std::size(special) ? special[r] : id(rng);
  const RowRef out = wrapping(rows, dim, 1, 2);
  std::vector<uint32_t> out_words(extent(out, rows, dim), kSentinel);

  const vk::Buffer id_buffer = test::upload_words(context, ids, "test ids");
  const vk::Buffer t_buffer = test::upload_words(context, table.words, "test table");
  const vk::Buffer out_buffer = test::upload_words(context, out_words, "test embeddings");
  vk::DescriptorArena arena(context);
  const kernels::Embedding embedding =
      kernels::Embedding::create(context, arena, plan, type, {&id_buffer}, {&t_buffer}, {&out_buffer}).value_or_throw();
  // Where row `first` starts: elements of the float types, bytes of the block types.
  const ElementBlock block = element_block(type);
  auto row_start = [&](uint32_t first) {
    return start_offset(type) + (block.values == 1 ? first * dim : first * (dim / block.values) * block.bytes);
  };
  test::run_once(context, [&](vk::CommandRecorder& rec) {
    // The part at first_id 0 first: it zeros the rows of ids outside it.
    const uint32_t part_rows = split > 0 ? split : vocab;
    embedding.record(rec, {rows, dim, part_rows, row_start(0), RowRef::contiguous(1), out, 0}).or_throw();
    if (split > 0)
      embedding.record(rec, {rows, dim, vocab - split, row_start(split), RowRef::contiguous(1), out, split}).or_throw();
  });
  const std::vector<uint32_t> after = test::download_words(context, out_buffer, 0, out_words.size());

  const std::vector<double> expected = ops::embedding(table.values, dim, ids);
  // One fp32 rounding of each decoded value (scale times level, plus offset).
  check_close(get_rows(after, out, rows, dim), expected, [&](size_t i) { return 1e-6 * std::abs(expected[i]) + 1e-7; });
  check_untouched(out_words, after, out, rows, dim);
}

TEST_CASE("block kernels: embedding lookup decodes BF16 and every block type, whole or split, zeros for out-of-range ids") {
  std::mt19937_64 rng(9003);
  Context& context = test::gpu();
  const kernels::KernelPlan plan = kernels::plan_kernels(context.caps());
  for (ElementType type : kTypes) {
    check_embedding(context, plan, type, 9, 2, 0, rng);
    check_embedding(context, plan, type, 11, 1, 19, rng);
    check_embedding(context, folded(plan), type, 6, 3, 5, rng);
  }
  test::check_no_validation_messages(context);
}

// Q8_0 read both ways on one device: int8 loads (gpu() and tiny_gpu() prefer
// them over lavapipe's quirk byte_loads_lane_by_lane) and the 32-bit words
// (8-bit storage switched off), each on the tiled GEMM, matvec, direct and
// embedding paths; the build each context runs is asserted, not assumed.
TEST_CASE("block kernels: Q8_0 as int8 loads (8-bit storage) and as 32-bit words both match the float64 decode") {
  std::mt19937_64 rng(9004);
  ContextOptions options;
  options.disabled_features = FeatureSet{}.add(Feature::storage_8bit);
  options.limits = LimitOverrides{32u, 1536u, std::nullopt};  // tiny_gpu()'s: small sizes cross many tiles
  auto words_owner = Context::create(options).value_or_throw();
  Context& words = *words_owner;
  using kernels::ShaderId;
  using kernels::WeightKernel;
  bool int8_ran = false;
  for (Context* context : {&test::gpu(), &test::tiny_gpu(), &words}) {
    const bool int8 = kernels::q8_0_as_int8(context->caps());
    const std::string reads = std::string(int8 ? "int8 loads" : "32-bit words") + (context == &words ? " (8bit off)" : "");
    INFO("Q8_0 read as " << reads);
    CHECK(int8 == (context != &words && context->caps().storage_8bit));
    CHECK(kernels::weight_variant(*context, WeightKernel::gemm, ElementType::q8_0, "W").value_or_throw() ==
          (int8 ? ShaderId::matmul_q8_0_int8 : ShaderId::matmul_q8_0));
    CHECK(kernels::weight_variant(*context, WeightKernel::matvec, ElementType::q8_0, "W").value_or_throw() ==
          (int8 ? ShaderId::matvec_q8_0_int8 : ShaderId::matvec_q8_0));
    CHECK(kernels::weight_variant(*context, WeightKernel::direct, ElementType::q8_0, "W").value_or_throw() ==
          (int8 ? ShaderId::matmul_direct_q8_0_int8 : ShaderId::matmul_direct_q8_0));
    CHECK(kernels::weight_variant(*context, WeightKernel::embedding, ElementType::q8_0, "W").value_or_throw() ==
          (int8 ? ShaderId::embedding_q8_0_int8 : ShaderId::embedding_q8_0));
    int8_ran = int8_ran || int8;
    const kernels::KernelPlan plan = kernels::plan_kernels(context->caps());
    // Blocks of 34 bytes: every other one starts half a word off. Rows 1 and
    // 3 take matvec; outputs and rows off every tile and workgroup.
    for (const Case& c : {Case{1, 9, 513, true}, Case{3, 2, 65, false, true, true}, Case{33, 3, 70, true, true},
                          Case{130, 1, 129, false, false, true}})
      check_paths(*context, plan, ElementType::q8_0, c, rng);
    check_paths(*context, folded(plan), ElementType::q8_0, {70, 2, 40, true, false}, rng);
    check_embedding(*context, plan, ElementType::q8_0, 11, 1, 19, rng);
    check_embedding(*context, folded(plan), ElementType::q8_0, 6, 3, 5, rng);
    test::check_no_validation_messages(*context);
  }
  // lavapipe has 8-bit storage; only ATTENDRE_DISABLE=8bit takes it away.
  if (test::gpu().caps().storage_8bit) CHECK(int8_ran);
}

}  // namespace

// A gated direct product (matmul_direct.comp's GATED: the FFN's gate, up
// and activation in one dispatch) over W = [gate rows; up rows]: against
// act(gate) * up of the float64 products, and bit for bit against the
// plain product of the same 2 * out rows followed by the activation kernel
// (same sums, same activation.glsl), in every encoding and tile, with rows
// off vec4 boundaries (rings) and outputs off the workgroup.
TEST_CASE("block kernels: gated direct products equal the product of [gate; up] then the activation, bit for bit") {
  Context& context = test::gpu();
  std::mt19937_64 rng(9107);
  const kernels::KernelPlan device = with_style(kernels::plan_kernels(context.caps()), true);
  REQUIRE(device.direct_share > 1);
  struct Tile {
    uint32_t rows, share;
  };
  const Tile tiles[] = {{1, 1}, {3, device.direct_share}, {8, device.direct_share}, {16, device.direct_share}};
  const ElementType types[] = {ElementType::f32, ElementType::f16, ElementType::bf16, ElementType::q8_0,
                               ElementType::q4_0, ElementType::q4_k, ElementType::q6_k};
  const ActivationKind kinds[] = {ActivationKind::silu, ActivationKind::gelu_tanh, ActivationKind::relu};
  uint32_t compared = 0;
  for (ElementType type : types) {
    const bool floats = element_block(type).values == 1;
    const Case cases[] = {{1, floats ? 100u : 2u, 37}, {2, floats ? 96u : 1u, 70}, {19, floats ? 45u : 3u, 33},
                          {9, floats ? 100u : 2u, 65, false, false, true}};
    for (const Tile& tile : tiles)
      for (const Case& c : cases) {
        const ActivationKind kind = kinds[compared % 3];
        kernels::KernelPlan plan = device;
        plan.direct_share = tile.share;
        plan.direct_float_rows = plan.direct_block_rows = tile.rows;
        const uint32_t in = c.blocks * element_block(type).values, F = c.out;
        INFO(to_string(type) << ": tile rows " << tile.rows << ", share " << tile.share << ", rows " << c.rows
                             << ", in " << in << ", out " << F << ", ring " << c.ring << ", activation "
                             << static_cast<int>(kind));
        const std::vector<float> a = normal_values(size_t{c.rows} * in, rng), w = normal_values(size_t{2} * F * in, rng);
        // Float weights from element 3 (scalar loads) or byte 16 (vec4s), alternately.
        const Encoded e = encode(type, w, floats ? (compared % 2 ? 16u : 3 * element_block(type).bytes) : kStartByte);
        const RowRef a_rows = c.ring ? wrapping(c.rows, in, 1, 3) : RowRef::contiguous(in);
        std::vector<uint32_t> a_words(extent(a_rows, c.rows, in), kSentinel);
        put_rows(a_words, a_rows, c.rows, in, a);
        const RowRef gated_rows = RowRef::contiguous(F, 4), both_rows = RowRef::contiguous(2 * F);
        const std::vector<uint32_t> gated_before(extent(gated_rows, c.rows, F), kSentinel);
        const vk::Buffer a_buffer = test::upload_words(context, a_words, "test A");
        const vk::Buffer w_buffer = test::upload_words(context, e.words, "test W");
        const vk::Buffer gated_buffer = test::upload_words(context, gated_before, "gated C");
        const vk::Buffer both_buffer = test::device_words(context, extent(both_rows, c.rows, 2 * F), kSentinel, "gate|up");
        const vk::Buffer activated = test::device_words(context, uint64_t{c.rows} * F, kSentinel, "activated");
        vk::DescriptorArena arena(context);
        const kernels::Matmul gated = kernels::Matmul::create(context, arena, plan, type, {&a_buffer}, {&w_buffer},
                                                              {&gated_buffer}, {}, MemoryStorage::f32, kind)
                                          .value_or_throw();
        const kernels::Matmul plain =
            kernels::Matmul::create(context, arena, plan, type, {&a_buffer}, {&w_buffer}, {&both_buffer}).value_or_throw();
        const kernels::Activation act = kernels::Activation::create(context, arena, plan, kind, true, {&both_buffer},
                                                                    {&activated})
                                            .value_or_throw();
        kernels::Matmul::Args args;
        args.rows = c.rows;
        args.in = in;
        args.out = F;
        args.w_offset = e.offset;
        args.a = a_rows;
        args.c = gated_rows;
        kernels::Matmul::Args both = args;
        both.out = 2 * F;
        both.c = both_rows;
        test::run_once(context, [&](vk::CommandRecorder& rec) {
          gated.record(rec, args).or_throw();
          plain.record(rec, both).or_throw();
          act.record(rec, {c.rows, F, RowRef::contiguous(2 * F), RowRef::contiguous(2 * F, F), RowRef::contiguous(F)})
              .or_throw();
        });
        const std::vector<uint32_t> after = test::download_words(context, gated_buffer, 0, gated_before.size());
        check_untouched(gated_before, after, gated_rows, c.rows, F);
        const std::vector<uint32_t> separate = test::download_words(context, activated, 0, uint64_t{c.rows} * F);
        const std::vector<float> got = get_rows(after, gated_rows, c.rows, F);
        uint32_t differ = 0;
        for (size_t i = 0; i < got.size(); ++i) differ += test::float_bits(got[i]) != separate[i];
        CHECK_MESSAGE(differ == 0, differ << " outputs differ from the product then the activation");
        // And the float64 truth: act(g) * u, with g's and u's own fp32 errors carried through.
        const std::vector<double> sums = ops::matmul(ops::widen(a), e.values, c.rows, in, 2 * F, {}, {});
        std::vector<double> expected(size_t{c.rows} * F), tolerance(expected.size());
        for (uint32_t r = 0; r < c.rows; ++r)
          for (uint32_t o = 0; o < F; ++o) {
            const double g = sums[size_t{r} * 2 * F + o], u = sums[size_t{r} * 2 * F + F + o];
            double a_sq = 0, g_sq = 0, u_sq = 0;
            for (uint32_t i = 0; i < in; ++i) {
              a_sq += double(a[size_t{r} * in + i]) * a[size_t{r} * in + i];
              g_sq += e.values[size_t{o} * in + i] * e.values[size_t{o} * in + i];
              u_sq += e.values[size_t{F + o} * in + i] * e.values[size_t{F + o} * in + i];
            }
            const double scale = 1e-5 * (std::sqrt(double(in)) + 4.0) * std::sqrt(a_sq / in);
            const double err_g = scale * std::sqrt(g_sq / in) + 1e-6 * std::abs(g);
            const double err_u = scale * std::sqrt(u_sq / in) + 1e-6 * std::abs(u);
            expected[size_t{r} * F + o] = ops::activate(kind, g) * u;
            tolerance[size_t{r} * F + o] = 1.2 * err_g * (std::abs(u) + err_u) + err_u * std::abs(ops::activate(kind, g)) +
                                           1e-6 * std::abs(expected[size_t{r} * F + o]) + 1e-12;
          }
        CHECK(count_outside(got, expected, [&](size_t i) { return tolerance[i]; }, 3) == 0);
        ++compared;
      }
  }
  CHECK(compared == std::size(types) * std::size(tiles) * 4);
  // Gated products are direct only, from fp32 A rows, with no bias or residual.
  vk::DescriptorArena arena(context);
  const vk::Buffer any = test::device_words(context, 64, 0u, "any");
  CHECK(kernels::Matmul::create(context, arena, with_style(device, false), ElementType::f32, {&any}, {&any}, {&any}, {},
                                MemoryStorage::f32, ActivationKind::silu)
            .status()
            .code() == ErrorCode::invalid_argument);
  test::check_no_validation_messages(context);
}
