#include "text/tokenizer_special.hpp"

#include "text/tokenizer_vocabulary.hpp"

#include <algorithm>

namespace attendre::tokenizer {
namespace {

// C's isspace in the "C" locale, which llama.cpp's stripping uses.
bool is_ascii_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'; }

bool contains(const std::vector<int32_t>& ids, int32_t id) { return std::find(ids.begin(), ids.end(), id) != ids.end(); }

}  // namespace

SpecialTokenSplitter::SpecialTokenSplitter(const Vocabulary& vocabulary) {
  for (size_t i = 0; i < vocabulary.tokens.size(); ++i) {
    const auto id = static_cast<int32_t>(i);
    const TokenType type = token_type(vocabulary, id);
    if (!is_special(type)) continue;
    if (vocabulary.tokens[i].empty()) continue;
    specials_.push_back({id, vocabulary.tokens[i], type == TokenType::user_defined, contains(vocabulary.lstrip, id),
                         contains(vocabulary.rstrip, id)});
  }
  std::stable_sort(specials_.begin(), specials_.end(),
                   [](const Special& a, const Special& b) { return a.text.size() > b.text.size(); });
  std::vector<ByteTrie::Entry> entries;
  for (size_t i = 0; i < specials_.size(); ++i) {
    entries.push_back({specials_[i].text, static_cast<int32_t>(i)});
    any_always_ = any_always_ || specials_[i].always;
  }
  trie_ = ByteTrie(std::move(entries));
}

std::vector<Fragment> SpecialTokenSplitter::split(std::string_view text, bool parse_special) const {
  std::vector<Fragment> fragments;
  if (text.empty()) return fragments;
  fragments.push_back({text, -1});
  if (!parse_special && !any_always_) return fragments;
  // Scanning the text once for which special tokens occur at all lets a
  // vocabulary with thousands of them (deepseek's 2,400 user-defined
  // tokens) cost one pass, not one pass per token.
  std::vector<char> present(specials_.size(), 0);
  for (size_t start = 0; start < text.size(); ++start)
    trie_.for_each_prefix(text.substr(start), [&](size_t, int32_t index) { present[static_cast<size_t>(index)] = 1; });
  std::vector<Fragment> scratch;
  for (size_t i = 0; i < specials_.size(); ++i) {
    if (!present[i] || !(parse_special || specials_[i].always)) continue;
    claim(specials_[i], fragments, scratch);
  }
  return fragments;
}

void SpecialTokenSplitter::claim(const Special& special, std::vector<Fragment>& fragments,
                                 std::vector<Fragment>& scratch) {
  scratch.clear();
  for (const Fragment& fragment : fragments) {
    if (fragment.token >= 0) {
      scratch.push_back(fragment);
      continue;
    }
    std::string_view rest = fragment.text;
    for (size_t found = rest.find(special.text); found != std::string_view::npos; found = rest.find(special.text)) {
      std::string_view left = rest.substr(0, found);
      if (special.lstrip)
        while (!left.empty() && is_ascii_space(left.back())) left.remove_suffix(1);
      if (!left.empty()) scratch.push_back({left, -1});
      scratch.push_back({{}, special.id});
      rest.remove_prefix(found + special.text.size());
      if (special.rstrip)
        while (!rest.empty() && is_ascii_space(rest.front())) rest.remove_prefix(1);
    }
    if (!rest.empty()) scratch.push_back({rest, -1});
  }
  fragments.swap(scratch);
}

}  // namespace attendre::tokenizer
