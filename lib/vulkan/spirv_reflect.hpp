// Which storage-buffer and uniform-texel-buffer bindings a compute shader
// reads and writes, read off its SPIR-V: the same decorations (NonWritable, NonReadable) that the
// validation layer's synchronization checks use, so that the barriers the
// recorder derives from them agree with what the validation layer sees.
#pragma once

#include <attendre/status.hpp>

#include <cstdint>
#include <span>
#include <vector>

namespace attendre::vk {

struct BindingAccess {
  bool used = false;    // some variable of descriptor set 0 has this binding
  bool reads = false;   // a member is not NonReadable
  bool writes = false;  // a member is not NonWritable
  bool texel = false;   // a uniform texel buffer (samplerBuffer: read only)
};

// Accesses of bindings 0..n-1 of descriptor set 0 (storage buffers and
// uniform texel buffers; a texel buffer is read and never written) (n: the largest binding
// declared + 1). Several variables may alias one binding (typed views of the
// same buffer): their accesses are merged. Fails (invalid_argument) on a
// malformed module (the embedded shaders are generated, so that is a build bug).
Result<std::vector<BindingAccess>> reflect_storage_bindings(std::span<const uint32_t> spirv);

}  // namespace attendre::vk
