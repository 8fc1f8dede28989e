// The public Tokenizer handle over the internal tokenizer (io/tokenizer.hpp):
// what the library builds it from.
#pragma once

#include "io/gguf.hpp"
#include "io/tokenizer.hpp"

#include <attendre/tokenizer.hpp>

namespace attendre {

struct Tokenizer::Impl {
  tokenizer::Tokenizer tokenizer;
  std::vector<uint32_t> stop_tokens;
};

struct TokenizerAccess {
  // The tokenizer of an open GGUF file; messages name the file.
  static Result<Tokenizer> from_file(const gguf::File& file);
};

}  // namespace attendre
