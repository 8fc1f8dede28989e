// --lm-infinite [N_LOCAL]: LM-Infinite's capped RoPE distances (paper
// section 4) from the command line, shared by every tool that runs a GGUF
// model's stack (generate, perplexity, the reader). The window is the
// model's trained context_length unless given, so the flag alone means
// "the model's own LM-Infinite".
#pragma once

#include "arguments.hpp"

#include <attendre/stack.hpp>

#include <cstdint>
#include <optional>

namespace attendre::cli {

struct LmInfiniteRequest {
  bool enabled = false;
  std::optional<uint32_t> n_local;  // absent: the model's context length

  // The setting for a model trained on `context_length` positions.
  LmInfinite resolve(uint32_t context_length) const;
};

// The option "--lm-infinite [N_LOCAL]" over `target`: a positive count, or
// nothing (the next argument starting with '-' is the next option).
Option lm_infinite_option(LmInfiniteRequest& target);

// Its line of --help.
const char* lm_infinite_help();

}  // namespace attendre::cli
