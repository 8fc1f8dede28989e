// Reference codecs for ggml's tensor types, on the CPU and without Vulkan:
// a float64 dequantizer written from each type's block layout (the yardstick
// GPU dequantization kernels are tested against) and a quantizer producing
// the same layout (for test models and fixtures). The quantizers follow
// ggml's reference ones (round-to-nearest scales for the legacy types, a
// weighted scale/min search for the K-quants); their bytes need not equal
// llama.cpp's, but they are valid blocks that dequantize close to the input.
//
// Types: F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q4_K, Q5_K, Q6_K.
#pragma once

#include "gguf/gguf.hpp"

namespace attendre::gguf {

// Whether quantize() and dequantize() handle `type`.
bool has_reference_codec(TensorType type);

// Decodes whole blocks of `type` into `out`, which must hold exactly the
// blocks' elements. unsupported for a type without a codec, malformed_input
// when `blocks` is not a whole number of blocks, invalid_argument when `out`
// has the wrong size.
// Checks once, then decodes every block unchecked.
Status dequantize(TensorType type, std::span<const std::byte> blocks, std::span<double> out);
Result<std::vector<double>> dequantize(TensorType type, std::span<const std::byte> blocks);

// Encodes `in` into blocks of `type`, replacing `out`. `in` holds whole rows,
// each a multiple of the type's block (32 or 256 values), so its size must be
// one too (invalid_argument otherwise, as for a value that is not finite in a
// block type; F32, F16 and BF16 carry infinities and NaNs through).
Status quantize(TensorType type, std::span<const float> in, std::vector<std::byte>& out);
Result<std::vector<std::byte>> quantize(TensorType type, std::span<const float> in);


// bfloat16: the top half of a binary32; rounding to nearest, ties to even,
// NaN kept a (quiet) NaN. For fp16 see core/half.hpp.
uint16_t float_to_bf16(float value);
float bf16_to_float(uint16_t value);

}  // namespace attendre::gguf
