// What a GGUF file's metadata says about its model: general.architecture and
// the <arch>.* hyper-parameters as the model's half of a StackConfig, checked
// against the file's tensors (every tensor the stack needs is there, with the
// shape the hyper-parameters give it and an encoding attendre decodes, and
// no tensor the stack would silently ignore).
#pragma once

#include "io/gguf.hpp"

#include <attendre/model.hpp>
#include <attendre/stack.hpp>

namespace attendre::gguf {

struct ModelDescription {
  StackConfig stack;  // memory fields: the default plan's
  MemoryPlan default_memory;
  ModelInfo info;
};

// Throws Error with a one-line message naming the file and the key or
// tensor: malformed_input (missing or inconsistent), unsupported (an
// architecture, RoPE scaling, mixture of experts or encoding not run yet).
ModelDescription describe_model(const File& file, WeightType storage);

}  // namespace attendre::gguf
