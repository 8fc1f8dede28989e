// RoPE scaling from GGUF metadata, as llama.cpp reads it: the type
// <arch>.rope.scaling.type (absent: linear), the factor
// <arch>.rope.scaling.factor (or the older rope.scale_linear; absent or 0:
// 1), and llama3's per-pair factors, which convert_hf_to_gguf.py writes as
// the tensor rope_freqs.weight [rope_dims / 2] rather than as keys.
#pragma once

#include "io/gguf_metadata.hpp"

#include <attendre/transformer.hpp>

namespace attendre::gguf {

// none (whatever the factor: llama.cpp never scales under it), linear (a
// factor of 1 is no scaling), and rope_freqs.weight on top of either.
// Throws unsupported naming rope.scaling.type for yarn, longrope and any
// other type.
RopeScaling read_rope_scaling(const Metadata& metadata);

}  // namespace attendre::gguf
