// Model tensors as a weight source hands them out: by GGUF-style name and
// row-major shape, each in its own element encoding (plain floats or a
// GGUF block format), so that quantized weights reach the device as they
// are stored and are decoded inside the kernels.
#pragma once

#include <attendre/status.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace attendre {

// Element encodings, numbered as GGUF (ggml) numbers them.
enum class ElementType : uint32_t {
  f32 = 0, f16 = 1, q4_0 = 2, q4_1 = 3, q5_0 = 6, q5_1 = 7, q8_0 = 8,
  q4_k = 12, q5_k = 13, q6_k = 14, bf16 = 30,
};

// "F32", "F16", "Q4_K", ... as GGUF tools print them.
std::string_view to_string(ElementType type);
// The type with GGUF id `id`, or nullopt for ids attendre does not decode.
std::optional<ElementType> element_type(uint32_t id);
// Values one block encodes and its bytes (1 and 4 for f32).
struct ElementBlock {
  uint32_t values = 1, bytes = 4;
};
ElementBlock element_block(ElementType type);
// Bytes of `values` values; invalid_argument unless `values` is a whole number of blocks.
Result<uint64_t> encoded_bytes(ElementType type, uint64_t values);

// One tensor's bytes in their encoding, rows contiguous (cols * rows values).
struct TensorView {
  ElementType type = ElementType::f32;
  std::span<const std::byte> bytes;
};

// Tensors by GGUF-style name, row-major with the first dimension outermost:
// token_embd.weight [vocab][hidden], blk.L.attn_norm.weight [hidden],
// blk.L.attn_q.weight [heads_q*head_dim][hidden] (and attn_k, attn_v),
// blk.L.attn_output.weight [hidden][heads_q*head_dim], blk.L.ffn_norm.weight,
// blk.L.ffn_gate.weight / ffn_up.weight [ffn][hidden], blk.L.ffn_down.weight
// [hidden][ffn], output_norm.weight, output.weight [vocab][hidden]; biases
// are NAME.bias, LayerNorm shifts are the norms' .bias. Position tensors:
// blk.L.attn_rel_b.weight [num_buckets][heads_q] (T5 bias) and
// rope_freqs.weight [rope_dims / 2] (per-pair RoPE divisors).
class WeightSource {
 public:
  virtual ~WeightSource() = default;
  // The encoding of tensor `name` of row-major `shape`, or nullopt when the
  // source has none; cheap (no data is read). Fails naming the tensor when
  // it exists with another shape, or when the source cannot read it.
  virtual Result<std::optional<ElementType>> type_of(const std::string& name, std::span<const uint64_t> shape) = 0;
  // The tensor itself, as type_of() describes it; its bytes stay valid
  // until the next call of tensor() or the source's destruction.
  virtual Result<std::optional<TensorView>> tensor(const std::string& name, std::span<const uint64_t> shape) = 0;

};

// Deterministic fp32 weights for tests and benchmarks: each tensor drawn
// from a generator seeded by (seed, name), so every backend sees the same
// values. Matrices are uniform in +-sqrt(3/in) (unit variance through a
// product), norm gains near 1, biases and shifts small, rope_freqs factors
// in [1, 8]. Every name exists.
class RandomWeights final : public WeightSource {
 public:
  explicit RandomWeights(uint64_t seed) : seed_(seed) {}
  Result<std::optional<ElementType>> type_of(const std::string& name, std::span<const uint64_t> shape) override;
  Result<std::optional<TensorView>> tensor(const std::string& name, std::span<const uint64_t> shape) override;
  // The values of tensor `name` of `shape`, as floats.
  std::vector<float> values(const std::string& name, std::span<const uint64_t> shape) const;

 private:
  uint64_t seed_;
  std::vector<float> last_;  // the bytes tensor() returned last
};

}  // namespace attendre
