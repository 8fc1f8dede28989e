// Splitting special tokens out of text before a model runs, with
// llama.cpp's semantics (tokenizer_st_partition): the special tokens are
// taken longest first (ties: lower id first); each claims every occurrence
// of its text, left to right, in the text the longer ones left over. A token
// marked lstrip/rstrip also removes the ASCII whitespace just before/after it.
//
// User-defined tokens are always split out (Hugging Face's added tokens);
// control and unknown tokens only when parse_special is on.
#pragma once

#include "text/tokenizer.hpp"
#include "text/tokenizer_trie.hpp"

#include <cstdint>
#include <string_view>
#include <vector>

namespace attendre::tokenizer {

struct Fragment {
  std::string_view text;  // when token < 0
  int32_t token = -1;     // a special token's id, or -1 for text
};

class SpecialTokenSplitter {
 public:
  explicit SpecialTokenSplitter(const Vocabulary& vocabulary);

  // `text` cut into text fragments (non-empty) and special tokens, in order.
  std::vector<Fragment> split(std::string_view text, bool parse_special) const;

 private:
  struct Special {
    int32_t id = 0;
    std::string_view text;
    bool always = false;  // user-defined: split even without parse_special
    bool lstrip = false, rstrip = false;
  };
  // Claims every occurrence of `special` in the text fragments of `fragments`.
  static void claim(const Special& special, std::vector<Fragment>& fragments, std::vector<Fragment>& scratch);

  std::vector<Special> specials_;  // longest first
  ByteTrie trie_;                  // text -> index in specials_, to skip the tokens a text does not contain
  bool any_always_ = false;        // whether any token is split out without parse_special
};

}  // namespace attendre::tokenizer
