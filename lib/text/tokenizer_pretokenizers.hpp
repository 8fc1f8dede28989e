// The pre-tokenizers of byte-level BPE vocabularies, by their
// tokenizer.ggml.pre name: the regexes that cut text into words before BPE
// (applied in sequence, as llama.cpp does), and the flags llama.cpp ties to
// the name.
#pragma once

#include <span>
#include <string>
#include <string_view>

namespace attendre::tokenizer {

struct PreTokenizerSpec {
  std::string_view names;                     // the tokenizer.ggml.pre values, space-separated
  std::span<const std::string_view> regexes;  // PCRE2 patterns, applied in sequence
  bool ignore_merges = false;                 // a word that is a whole token skips BPE (Llama 3)
  bool add_bos = false;                       // default of tokenizer.ggml.add_bos_token
  bool clean_spaces = true;                   // Vocabulary::clean_spaces
};

// The spec for `name` ("" means llama.cpp's "default", what it uses when the
// key is absent), or nullptr when this library does not know it.
const PreTokenizerSpec* find_pre_tokenizer(std::string_view name);

// Every supported name, comma-separated, for error messages.
std::string supported_pre_tokenizers();

}  // namespace attendre::tokenizer
