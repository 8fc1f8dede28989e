#include "weights.hpp"

#include "costs.hpp"
#include "timing.hpp"

#include "gguf/quant.hpp"
#include "kernels/kernel_plan.hpp"
#include "kernels/matmul.hpp"
#include "vulkan/buffer.hpp"

#include <attendre/error.hpp>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstring>
#include <random>

namespace bench {
namespace {

using attendre::ElementType;
namespace kernels = attendre::kernels;
namespace vk = attendre::vk;

// One weight matrix of a preset's block, multiplied by `rows` rows (S for
// matmul, 1 for matvec).
struct MatrixShape {
  const char* role;
  uint32_t hidden, in, out, chunk;
};

// The presets' projections (presets.cpp): q, k (k and v alike), up (gate
// and up alike) and down; o has q's shape transposed (equal when square).
std::vector<MatrixShape> matrix_shapes(bool quick) {
  const MatrixShape mobile_down{"down", 576, 1536, 576, 64};
  if (quick) return {mobile_down};  // 1536 = 6 K-quant super-blocks: every encoding fits
  return {{"q", 576, 576, 576, 64},      {"k", 576, 576, 192, 64},       {"up", 576, 576, 1536, 64},
          mobile_down,                   {"q", 2048, 2048, 2048, 128},   {"k", 2048, 2048, 512, 128},
          {"up", 2048, 2048, 8192, 128}, {"down", 2048, 8192, 2048, 128}};
}

const ElementType kEncodings[] = {ElementType::f32,  ElementType::f16,  ElementType::bf16,
                                  ElementType::q8_0, ElementType::q4_0, ElementType::q4_1,
                                  ElementType::q5_0, ElementType::q5_1, ElementType::q4_k,
                                  ElementType::q5_k, ElementType::q6_k};

std::string lower(std::string_view name) {
  std::string s(name);
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// `rows` x `cols` weights in `type`: normal values encoded by the reference
// quantizer, 64 rows of them repeated (the decoders' work does not depend on
// the values, and encoding a whole desktop matrix takes seconds).
std::vector<std::byte> encoded_weights(ElementType type, uint32_t rows, uint32_t cols) {
  const uint32_t distinct = std::min(rows, 64u);
  std::mt19937_64 rng(rows * 31 + cols);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> values(size_t{distinct} * cols);
  for (float& x : values) x = normal(rng);
  const std::vector<std::byte> some = attendre::gguf::quantize(static_cast<attendre::gguf::TensorType>(type), values).value_or_throw();
  std::vector<std::byte> all(some.size() / distinct * rows);
  for (size_t at = 0; at < all.size(); at += some.size()) std::memcpy(all.data() + at, some.data(), std::min(some.size(), all.size() - at));
  return all;
}

}  // namespace

void sweep_weight_kernels(attendre::Context& context, const Options& options, Results& results) {
  const Filter& f = options.filter;
  if (!f.block_kernel("matmul") && !f.block_kernel("matvec")) return;
  const kernels::KernelPlan plan = kernels::plan_kernels(context.caps());
  const uint32_t repeats = options.quick ? 3 : 5;
  for (const MatrixShape& m : matrix_shapes(options.quick)) {
    std::fprintf(stderr, "attendre-bench: weight decoding at in=%u out=%u\n", m.in, m.out);
    vk::Buffer a =
        vk::Buffer::create(context, uint64_t{m.chunk} * m.in * 4, vk::MemoryIntent::device, "bench A").value_or_throw();
    vk::Buffer c = vk::Buffer::create(
        context, uint64_t{m.chunk} * m.out * 4, vk::MemoryIntent::device, "bench C").value_or_throw();
    attendre::vk::Submission init = attendre::vk::Submission::create(context).value_or_throw();
    init.begin().value_or_throw()->fill(a, 0, a.size(), 0x3C000000u);  // 2^-7: finite sums whatever the weights
    init.submit().or_throw();
    init.wait().or_throw();
    for (ElementType type : kEncodings) {
      const std::string precision = lower(attendre::to_string(type));
      const attendre::ElementBlock block = attendre::element_block(type);
      if (m.in % block.values != 0) {
        results.skipped.push_back({precision + " weights at in=" + std::to_string(m.in),
                                   "rows are not whole blocks of " + std::to_string(block.values)});
        continue;
      }
      try {
        const std::vector<std::byte> bytes = encoded_weights(type, m.out, m.in);
        vk::Buffer w = vk::Buffer::create(
            context, (bytes.size() + 3) / 4 * 4, vk::MemoryIntent::upload, "bench W").value_or_throw();
        std::memcpy(w.mapped(), bytes.data(), bytes.size());
        w.flush_host_writes().or_throw();
        vk::DescriptorArena arena(context);
        // --fp16-activations: A as packed fp16 (its bytes hold 1.0 and 0
        // halves), the products over fp16 rows (*_a16, *_f16_a16_math).
        const attendre::MemoryStorage input =
            options.fp16_activations ? attendre::MemoryStorage::f16 : attendre::MemoryStorage::f32;
        const kernels::Matmul matmul =
            kernels::Matmul::create(context, arena, plan, type, {&a}, {&w}, {&c}, {}, input).value_or_throw();
        for (const uint32_t rows : {1u, m.chunk}) {
          const std::string name = rows == 1 ? "matvec" : "matmul";
          if (!f.block_kernel(name)) continue;
          kernels::Matmul::Args args;
          args.rows = rows;
          args.in = m.in;
          args.out = m.out;
          args.a = kernels::RowRef::contiguous(input == attendre::MemoryStorage::f16 ? (m.in + 1) / 2 : m.in);
          args.c = kernels::RowRef::contiguous(m.out);
          KernelResult k;
          k.name = name;
          k.role = m.role;
          k.precision = precision;
          k.shape = {{"hidden", m.hidden}, {"rows", rows}, {"in", m.in}, {"out", m.out}};
          k.median_ms =
              time_dispatch(context, repeats, [&](vk::CommandRecorder& rec) { matmul.record(rec, args).or_throw(); });
          k.samples = repeats;
          const Cost cost = matmul_cost(rows, m.in, m.out, double(block.bytes) / block.values, false);
          k.bytes = cost.bytes;
          k.flops = cost.flops;
          k.weight_bytes = static_cast<double>(bytes.size());
          if (k.median_ms <= 0.0) continue;
          rate(k, results.limits);
          results.kernels.push_back(std::move(k));
        }
      } catch (const attendre::Error& e) {
        if (e.code() != attendre::ErrorCode::unsupported && e.code() != attendre::ErrorCode::out_of_device_memory) throw;
        results.skipped.push_back({precision + " weights", e.what()});
      }
    }
  }
}

}  // namespace bench
