// The public Tokenizer handle over the internal tokenizer (text/tokenizer.hpp):
// what the library builds it from.
#pragma once

#include "gguf/gguf.hpp"
#include "text/tokenizer.hpp"

#include <attendre/tokenizer.hpp>

namespace attendre {

struct Tokenizer::Impl {
  tokenizer::Pipeline tokenizer;
  std::vector<uint32_t> stop_tokens;
};

struct TokenizerAccess {
  // The tokenizer of an open GGUF file; messages name the file.
  static Result<Tokenizer> from_file(const gguf::File& file);
};

}  // namespace attendre
