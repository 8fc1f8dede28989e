// The three tokenization algorithms behind one interface. Each encodes one
// fragment of text: the Pipeline has already checked the UTF-8 and split
// the special tokens out, and adds BOS/EOS itself.
#pragma once

#include "text/tokenizer.hpp"
#include "text/tokenizer_vocabulary.hpp"

#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

namespace attendre::tokenizer {

class TextModel {
 public:
  virtual ~TextModel() = default;
  // Appends the ids of `fragment` (non-empty, valid UTF-8) to `ids`.
  // `space_prefix`: the vocabulary's add_space_prefix applies to this
  // fragment (false where it continues text encoded before). Fails where the
  // vocabulary cannot spell the text (no token, no byte fallback, no
  // unknown token) or, for a corrupt charsmap, where the walk leaves it.
  virtual Status encode(std::string_view fragment, bool space_prefix, std::vector<int32_t>& ids) const = 0;
};

// The models keep references to `vocabulary` and `index`, which must outlive
// them. Each fails malformed_input naming the GGUF key when the vocabulary
// cannot serve it (merges naming unknown tokens, a corrupt charsmap, ...).
Result<std::unique_ptr<TextModel>> make_sentencepiece_bpe(const Vocabulary& vocabulary, const TokenIndex& index);
Result<std::unique_ptr<TextModel>> make_byte_level_bpe(const Vocabulary& vocabulary, const TokenIndex& index);
Result<std::unique_ptr<TextModel>> make_unigram(const Vocabulary& vocabulary);

}  // namespace attendre::tokenizer
