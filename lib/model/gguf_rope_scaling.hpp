// RoPE scaling from GGUF metadata, as llama.cpp reads it: the type
// <arch>.rope.scaling.type (absent: linear), the factor
// <arch>.rope.scaling.factor (or the older rope.scale_linear; absent or 0:
// 1), and llama3's per-pair factors, which convert_hf_to_gguf.py writes as
// the tensor rope_freqs.weight [rope_dims / 2] rather than as keys. Files
// that carry llama3's parameters as keys instead (rope.scaling.type llama3,
// with Hugging Face's rope_scaling fields under attendre's names
// rope.scaling.low_freq_factor, .high_freq_factor and llama.cpp's
// .original_context_length) run Meta's formula itself. phi3's LongRoPE
// tables rope_factors_short.weight and rope_factors_long.weight are per-pair
// divisors too; the memory picks one (RopeScaling::long_rope).
#pragma once

#include "gguf/gguf_metadata.hpp"

#include <attendre/transformer.hpp>

namespace attendre::gguf {

// none (whatever the factor: llama.cpp never scales under it), linear (a
// factor of 1 is no scaling), llama3 from keys, and rope_freqs.weight on
// top of none or linear, or LongRoPE's two tables. Fails unsupported naming
// rope.scaling.type for yarn, longrope and any other type, malformed_input
// naming the key of a factor out of range, of llama3 keys beside
// rope_freqs.weight, or a LongRoPE table without the other.
Result<RopeScaling> read_rope_scaling(const Metadata& metadata);

}  // namespace attendre::gguf
