// The lexical model's tokenizer: words and punctuation marks, with the
// sentence each belongs to. A word is a run of letters, digits and '_'
// (any character past ASCII counts as a letter, except the punctuation and
// space blocks of Unicode); every other visible character is a token of its
// own; spaces separate. A sentence ends after '.', '!' or '?', at a blank
// line, at the start of each part of the document, and after 64 tokens (so
// that text without punctuation still forms sentences). Words are hashed
// lowercased (FNV-1a, 64 bits) into Token::id; a fixed list of English
// function words ("the", "of", "is", ...) and punctuation are marked as not
// content, so that the lexical model does not match on them.
#pragma once

#include "token.hpp"

#include <string>

namespace reader {

class WordSplitter final : public TokenStream {
 public:
  static constexpr uint32_t kMaxSentenceTokens = 64;

  void begin_part(Part part) override;
  void feed(std::string_view text, std::vector<Token>& out) override;
  void end_part(std::vector<Token>& out) override;

 private:
  void end_word(std::vector<Token>& out);
  void emit(Token token, std::vector<Token>& out);
  void break_sentence() { break_before_next_ = true; }

  Part part_ = Part::context;
  uint64_t offset_ = 0;  // bytes of the part consumed so far
  std::string word_;     // the word being read, lowercased
  uint64_t word_start_ = 0;
  uint32_t word_bytes_ = 0;
  uint32_t sentence_ = 0;
  uint32_t sentence_tokens_ = 0;
  bool started_ = false;           // a token has been emitted in this document
  bool break_before_next_ = false;
  uint32_t newlines_ = 0;          // newlines since the last token: two make a blank line
};

// Whether `word` (lowercase ASCII) is one of the function words.
bool is_function_word(std::string_view word);

}  // namespace reader
