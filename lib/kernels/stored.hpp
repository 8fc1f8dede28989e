// How the kernels that read a memory's keys, values and queries read them
// (KvMemoryConfig::storage, shaders/stored.glsl): the one place that picks
// the shader variant, also read by kernel_variants().
#pragma once

#include "kernels/kernel.hpp"

#include <attendre/config.hpp>
#include <attendre/context.hpp>

namespace attendre::kernels {

enum class StoredPath {
  f32,        // fp32 words
  f16,        // fp16 through 16-bit loads (storageBuffer16BitAccess)
  f16_words,  // fp16 unpacked from 32-bit words (unpackHalf2x16)
};

// fp16 memories take the fp16 weights' path (f16_as_words): 16-bit loads
// where the device has 16-bit storage and it is not switched off.
StoredPath stored_path(const DeviceCaps& caps, MemoryStorage storage);

// The variant of a kernel for `path`, given its three.
ShaderId stored_variant(StoredPath path, ShaderId f32, ShaderId f16, ShaderId f16_words);

}  // namespace attendre::kernels
