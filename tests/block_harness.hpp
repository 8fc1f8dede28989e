// Helpers shared by the block-kernel tests: the contexts to run on, rows in
// wrapping rings, sentinel-checked buffer images, fp32 or fp16 weight
// images, and tolerance checks.
#pragma once

#include "kernel_harness.hpp"
#include "support.hpp"
#include "kernels/kernel_plan.hpp"
#include "kernels/activation.hpp"
#include "kernels/add.hpp"
#include "kernels/embedding.hpp"
#include "kernels/matmul.hpp"
#include "kernels/norm.hpp"
#include "kernels/rope.hpp"
#include "core/half.hpp"
#include "gguf/quant.hpp"
#include "reference/ops.hpp"
#include <attendre/error.hpp>
#include <attendre/transformer.hpp>
#include <doctest/doctest.h>
#include <algorithm>
#include <cstring>
#include <cmath>
#include <functional>
#include <initializer_list>
#include <limits>
#include <random>
#include <string>

namespace attendre::test::block {

namespace ops = reference::ops;
using kernels::RowRef;

constexpr uint32_t kSentinel = 0x7FC0DEADu;  // a NaN: any word a kernel must leave alone

// Runs `body` on each of `contexts` (by default the device-limits context
// and the tiny one), then checks that the validation layer stayed quiet.
inline void for_each_context(const std::function<void(Context&)>& body,
                             std::initializer_list<Context*> contexts = {&test::gpu(), &test::tiny_gpu()}) {
  for (Context* context : contexts) {
    INFO("context " << std::string(context == &test::gpu()                         ? "gpu"
                                   : context == &test::tiny_gpu()                  ? "tiny_gpu"
                                   : context->caps().disabled.has(Feature::float16) ? "half_loads_fp32_math_gpu"
                                                                                   : "tiny_words_gpu"));
    body(*context);
    test::check_no_validation_messages(*context);
  }
}

// The plan with every grid folded into at most 3 x 2 workgroups, so that
// each kernel's loop over logical groups runs many times.
inline kernels::KernelPlan folded(kernels::KernelPlan plan) {
  plan.max_groups_x = 3;
  plan.max_groups_y = 2;
  return plan;
}

inline std::vector<float> normal_values(size_t count, std::mt19937_64& rng, float mean = 0.0f, float sd = 1.0f) {
  std::normal_distribution<float> normal(mean, sd);
  std::vector<float> v(count);
  for (float& x : v) x = normal(rng);
  return v;
}

// Rows in a ring of rows + 2 slots whose row 1 wraps to slot 0, with `pad`
// unused words after each row and `offset` words before the ring.
inline RowRef wrapping(uint32_t rows, uint32_t cols, uint32_t pad, uint32_t offset) {
  return RowRef::ring(cols + pad, rows + 2, rows + 1, offset);
}

// Words a buffer needs to hold `rows` rows of `cols` words under `ref`.
inline uint64_t extent(const RowRef& ref, uint32_t rows, uint32_t cols) {
  uint64_t end = ref.offset;
  for (uint32_t r = 0; r < rows; ++r) end = std::max(end, ref.word(r) + cols);
  return end + 3;  // trailing sentinels
}

inline void put_rows(std::vector<uint32_t>& words, const RowRef& ref, uint32_t rows, uint32_t cols,
              std::span<const float> values) {
  for (uint32_t r = 0; r < rows; ++r)
    for (uint32_t i = 0; i < cols; ++i) words[ref.word(r) + i] = test::float_bits(values[size_t{r} * cols + i]);
}

inline std::vector<float> get_rows(std::span<const uint32_t> words, const RowRef& ref, uint32_t rows, uint32_t cols) {
  std::vector<float> v(size_t{rows} * cols);
  for (uint32_t r = 0; r < rows; ++r)
    for (uint32_t i = 0; i < cols; ++i) v[size_t{r} * cols + i] = test::bits_float(words[ref.word(r) + i]);
  return v;
}

// Fails for every word outside the written rows that changed.
inline void check_untouched(std::span<const uint32_t> before, std::span<const uint32_t> after, const RowRef& ref,
                     uint32_t rows, uint32_t cols) {
  std::vector<uint8_t> written(before.size(), 0);
  for (uint32_t r = 0; r < rows; ++r)
    for (uint32_t i = 0; i < cols; ++i) written[ref.word(r) + i] = 1;
  uint32_t stray = 0;
  for (size_t i = 0; i < before.size(); ++i)
    if (!written[i] && before[i] != after[i] && stray++ < 3) FAIL_CHECK("word " << i << " outside the output changed");
  CHECK(stray == 0);
}

// Elements outside tolerance(i) (NaN included); `report` of them are failed
// by name (0: none, so that a test can expect a mismatch).
inline uint32_t count_outside(std::span<const float> actual, std::span<const double> expected,
                              const std::function<double(size_t)>& tolerance, uint32_t report) {
  REQUIRE(actual.size() == expected.size());
  uint32_t bad = 0;
  for (size_t i = 0; i < actual.size(); ++i) {
    const double error = std::abs(static_cast<double>(actual[i]) - expected[i]);
    if (!(error <= tolerance(i)) && bad++ < report)
      FAIL_CHECK("element " << i << ": expected " << expected[i] << ", got " << actual[i] << " (tolerance "
                            << tolerance(i) << ")");
  }
  return bad;
}

// Fails for every element outside tolerance(i) (NaN included), naming the first few.
inline void check_close(std::span<const float> actual, std::span<const double> expected,
                 const std::function<double(size_t)>& tolerance) {
  CHECK(count_outside(actual, expected, tolerance, 3) == 0);
}

// fp16 elements from element `offset` on, packed two per word (low half first).
inline void put_halves(std::vector<uint32_t>& words, uint32_t offset, std::span<const uint16_t> halves) {
  for (size_t e = 0; e < halves.size(); ++e) {
    const size_t element = offset + e, word = element / 2, shift = 16 * (element % 2);
    words[word] = (words[word] & ~(0xFFFFu << shift)) | (uint32_t{halves[e]} << shift);
  }
}

// A weight matrix or table in a buffer image: fp32 words, or fp16 pairs, from
// element `offset`; returns the float64 values the GPU sees and the first free word.
struct Weights {
  std::vector<double> values;
  uint32_t end_word = 0;
};
inline Weights put_weights(std::vector<uint32_t>& words, WeightType type, uint32_t offset, std::span<const float> w) {
  Weights out;
  if (type == WeightType::f16) {
    const std::vector<uint16_t> halves = half::to_half(w);
    out.end_word = static_cast<uint32_t>((offset + w.size() + 1) / 2);
    words.resize(std::max<size_t>(words.size(), out.end_word), kSentinel);
    put_halves(words, offset, halves);
    out.values = ops::widen_half(halves);
  } else {
    out.end_word = static_cast<uint32_t>(offset + w.size());
    words.resize(std::max<size_t>(words.size(), out.end_word), kSentinel);
    for (size_t i = 0; i < w.size(); ++i) words[offset + i] = test::float_bits(w[i]);
    out.values = ops::widen(w);
  }
  return out;
}

// The kernel plan forcing one product path: direct, or tiled (matvec for
// rows <= kMatvecMaxRows, the GEMM above).
inline kernels::KernelPlan with_style(kernels::KernelPlan plan, bool direct) {
  plan.direct = direct;
  return plan;
}

// Where every encoded test matrix starts: byte 6, half a word in, so that
// the first block straddles a word boundary (the offset counts elements for BF16).
constexpr uint32_t kStartByte = 6;
inline uint32_t start_offset(ElementType type) { return element_block(type).values == 1 ? kStartByte / 2 : kStartByte; }

// A weight image in BF16 or a GGUF block type (encoded by the CPU codec,
// lib/gguf/quant.*): the encoded rows from kStartByte on, sentinels around
// them, and the float64 values the codec decodes from those bytes.
struct Encoded {
  std::vector<uint32_t> words;
  std::vector<double> values;
  std::vector<std::byte> bytes;
  uint32_t end_word = 0;  // first word past the rows
  uint32_t offset = 0;    // where the rows start: elements (float types) or bytes (block types)
};
// `start_byte` even, and for the float types a whole number of elements.
inline Encoded encode(ElementType type, std::span<const float> w, uint32_t start_byte = kStartByte) {
  const auto codec = static_cast<gguf::TensorType>(type);
  Encoded e;
  e.bytes = gguf::quantize(codec, w).value_or_throw();
  e.values = gguf::dequantize(codec, e.bytes).value_or_throw();
  e.end_word = static_cast<uint32_t>((start_byte + e.bytes.size() + 3) / 4);
  e.offset = element_block(type).values == 1 ? start_byte / element_block(type).bytes : start_byte;
  e.words.assign(e.end_word, kSentinel);
  std::memcpy(reinterpret_cast<std::byte*>(e.words.data()) + start_byte, e.bytes.data(), e.bytes.size());
  return e;
}

// fp16 runs everywhere: 16-bit loads where the device stores 16-bit values,
// unpacked 32-bit words where it does not (or ATTENDRE_DISABLE=16bit).
inline std::vector<WeightType> weight_types(const Context&) { return {WeightType::f32, WeightType::f16}; }

}  // namespace attendre::test::block
