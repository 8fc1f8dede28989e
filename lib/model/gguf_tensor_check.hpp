// The check every model file passes before anything runs: each tensor its
// stacks need is in the file with the shape the hyper-parameters give it and
// an encoding attendre decodes, and each tensor of the file is one the stacks
// read, so that nothing the file holds is silently ignored.
#pragma once

#include "gguf/gguf.hpp"
#include "gguf/gguf_weights.hpp"

#include <attendre/model.hpp>
#include <attendre/stack.hpp>

#include <set>
#include <span>
#include <string>

namespace attendre::gguf {

// One stack of a model and the prefix its tensor names carry in `weights`
// ("" for a decoder-only model, "enc." or "dec." for an encoder-decoder).
struct CheckedStack {
  const StackConfig* config = nullptr;
  std::string prefix;
};

// Returns `info` with parameters and tensor_bytes counted (each file tensor
// once). Fails malformed_input naming the file's tensor that is missing or
// misshapen, unsupported for a tensor no stack reads unless `ignorable`
// names it (tensors the architecture's own implementations ignore too).
Result<ModelInfo> check_tensors(const File& file, FileWeights& weights, std::span<const CheckedStack> stacks,
                        const std::set<std::string>& ignorable, ModelInfo info);

}  // namespace attendre::gguf
