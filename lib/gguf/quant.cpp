// Dispatch of the reference codecs, and the float types' codecs (F32, F16,
// BF16: one element per "block").
#include "gguf/quant.hpp"

#include "gguf/quant_codecs.hpp"
#include "core/try.hpp"

#include <bit>

namespace attendre::gguf {
namespace detail {
namespace {

void decode_f32(const std::byte* block, double* out) {
  float value;
  std::memcpy(&value, block, 4);
  *out = value;
}
void encode_f32(const float* in, std::byte* block) { std::memcpy(block, in, 4); }

void decode_f16(const std::byte* block, double* out) { *out = load_half(block); }
void encode_f16(const float* in, std::byte* block) { store_half(block, *in); }

void decode_bf16(const std::byte* block, double* out) {
  uint16_t bits;
  std::memcpy(&bits, block, 2);
  *out = bf16_to_float(bits);
}
void encode_bf16(const float* in, std::byte* block) {
  const uint16_t bits = float_to_bf16(*in);
  std::memcpy(block, &bits, 2);
}

constexpr BlockCodec kFloatCodecs[] = {
    {TensorType::f32, 1, 4, decode_f32, encode_f32},
    {TensorType::f16, 1, 2, decode_f16, encode_f16},
    {TensorType::bf16, 1, 2, decode_bf16, encode_bf16},
};

}  // namespace

std::span<const BlockCodec> float_codecs() { return kFloatCodecs; }

}  // namespace detail

namespace {

using detail::BlockCodec;

const BlockCodec* find_codec(TensorType type) {
  for (const auto codecs : {detail::float_codecs(), detail::legacy_codecs(), detail::k_codecs()})
    for (const BlockCodec& codec : codecs)
      if (codec.type == type) return &codec;
  return nullptr;
}

Result<const BlockCodec*> codec_for(TensorType type, const char* operation) {
  if (const BlockCodec* codec = find_codec(type)) return codec;
  return Status(ErrorCode::unsupported, std::string(operation) + ": no reference codec for " + to_string(type) +
                                            " (F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q4_K, Q5_K, Q6_K have one)");
}

Status refuse(ErrorCode code, const char* operation, TensorType type, const std::string& problem) {
  return {code, std::string(operation) + " " + to_string(type) + ": " + problem};
}

}  // namespace

bool has_reference_codec(TensorType type) { return find_codec(type) != nullptr; }

Status dequantize(TensorType type, std::span<const std::byte> blocks, std::span<double> out) {
  ATTENDRE_TRY_ASSIGN(const BlockCodec* checked, codec_for(type, "dequantize"));
  const BlockCodec& codec = *checked;
  if (blocks.size() % codec.bytes != 0)
    return refuse(ErrorCode::malformed_input, "dequantize", type,
                  std::to_string(blocks.size()) + " bytes are not a whole number of " + std::to_string(codec.bytes) +
                      "-byte blocks");
  const size_t count = blocks.size() / codec.bytes;
  if (out.size() != count * codec.elements)
    return refuse(ErrorCode::invalid_argument, "dequantize", type,
                  std::to_string(count) + " blocks hold " + std::to_string(count * codec.elements) +
                      " values, the output has room for " + std::to_string(out.size()));
  // Checked once above: the blocks decode unchecked.
  for (size_t b = 0; b < count; ++b) codec.decode(blocks.data() + b * codec.bytes, out.data() + b * codec.elements);
  return {};
}

Result<std::vector<double>> dequantize(TensorType type, std::span<const std::byte> blocks) {
  ATTENDRE_TRY_ASSIGN(const BlockCodec* codec, codec_for(type, "dequantize"));
  std::vector<double> out(blocks.size() / codec->bytes * codec->elements);
  ATTENDRE_TRY(dequantize(type, blocks, out));
  return out;
}

Status quantize(TensorType type, std::span<const float> in, std::vector<std::byte>& out) {
  ATTENDRE_TRY_ASSIGN(const BlockCodec* checked, codec_for(type, "quantize"));
  const BlockCodec& codec = *checked;
  if (in.size() % codec.elements != 0)
    return refuse(ErrorCode::invalid_argument, "quantize", type,
                  std::to_string(in.size()) + " values are not a whole number of " + std::to_string(codec.elements) +
                      "-value blocks (each row must be a multiple of the block)");
  // The scale searches assume finite input; a NaN would silently poison a block.
  for (size_t i = 0; i < in.size(); ++i)
    if (!std::isfinite(in[i]) && codec.elements > 1)
      return refuse(ErrorCode::invalid_argument, "quantize", type, "value " + std::to_string(i) + " is not finite");
  const size_t count = in.size() / codec.elements;
  out.assign(count * codec.bytes, std::byte{0});
  for (size_t b = 0; b < count; ++b) codec.encode(in.data() + b * codec.elements, out.data() + b * codec.bytes);
  return {};
}

Result<std::vector<std::byte>> quantize(TensorType type, std::span<const float> in) {
  std::vector<std::byte> out;
  ATTENDRE_TRY(quantize(type, in, out));
  return out;
}

uint16_t float_to_bf16(float value) {
  const uint32_t bits = std::bit_cast<uint32_t>(value);
  if ((bits & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<uint16_t>((bits >> 16) | 0x40u);  // NaN: keep it quiet
  // Adding 0x7FFF plus the lowest kept bit rounds to nearest with ties to
  // even; a carry into the exponent is the right result (up to infinity).
  return static_cast<uint16_t>((bits + 0x7FFFu + ((bits >> 16) & 1u)) >> 16);
}

float bf16_to_float(uint16_t value) { return std::bit_cast<float>(static_cast<uint32_t>(value) << 16); }

}  // namespace attendre::gguf
