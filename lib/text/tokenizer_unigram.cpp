// The unigram model (tokenizer.ggml.model = "t5"), as SentencePiece's
// unigram_model.cc and llama.cpp's llm_tokenizer_ugm run it:
//
// 1. Normalise: the precompiled charsmap's longest-prefix rules (when the
//    vocabulary has one), then whitespace: spaces become U+2581, a space is
//    put before the first word (add_space_prefix), and with
//    remove_extra_whitespaces runs of spaces collapse to one and leading
//    and trailing spaces go.
// 2. Viterbi: the segmentation of the normalised text into tokens with the
//    highest sum of scores (log probabilities; user-defined tokens score 0).
//    A character no token starts with becomes the unknown token, scored 10
//    below the lowest normal score; runs of unknown tokens are merged into
//    one. Scores are summed in double, as the reference does, so that ties
//    break the same way.
#include "core/try.hpp"
#include "text/tokenizer_charsmap.hpp"
#include "text/tokenizer_models.hpp"
#include "text/tokenizer_trie.hpp"
#include "text/tokenizer_unicode.hpp"

#include <algorithm>
#include <cfloat>
#include <limits>

namespace attendre::tokenizer {
namespace {

constexpr double kUnknownPenalty = 10.0;

class Unigram final : public TextModel {
 public:
  // The vocabulary has an unknown token (checked by make_unigram); `charsmap`
  // is its parsed precompiled_charsmap, if it has one.
  Unigram(const Vocabulary& vocabulary, std::optional<PrecompiledCharsmap> charsmap)
      : vocabulary_(vocabulary), charsmap_(std::move(charsmap)) {
    unknown_ = *vocabulary.unknown;
    float min_score = std::numeric_limits<float>::max();
    bool any_normal = false;
    std::vector<ByteTrie::Entry> entries;
    for (size_t id = 0; id < vocabulary.tokens.size(); ++id) {
      const auto token = static_cast<int32_t>(id);
      const TokenType type = token_type(vocabulary, token);
      if (type == TokenType::normal) {
        min_score = std::min(min_score, token_score(vocabulary, token));
        any_normal = true;
      }
      const bool matchable = type == TokenType::normal || type == TokenType::user_defined || type == TokenType::unused;
      if (matchable && !vocabulary.tokens[id].empty()) entries.push_back({vocabulary.tokens[id], token});
    }
    pieces_ = ByteTrie(std::move(entries));
    unknown_score_ = (any_normal ? double{min_score} : 0.0) - kUnknownPenalty;
  }

  Status encode(std::string_view fragment, bool space_prefix, std::vector<int32_t>& ids) const override {
    ATTENDRE_TRY_ASSIGN(const std::string text, normalize(fragment, space_prefix));
    if (text.empty()) return {};
    struct Best {
      double score = -DBL_MAX;
      int32_t token = -1;
      size_t start = 0;
    };
    std::vector<Best> best(text.size() + 1);
    best[0].score = 0;
    for (size_t start = 0; start < text.size();) {
      const size_t char_length = std::min(unicode::sequence_length(text[start]), text.size() - start);
      const double base = best[start].score;
      bool whole_char_token = false;
      pieces_.for_each_prefix(std::string_view(text).substr(start), [&](size_t length, int32_t token) {
        whole_char_token = whole_char_token || length == char_length;
        const double score =
            base + (token_type(vocabulary_, token) == TokenType::user_defined ? 0.0 : token_score(vocabulary_, token));
        if (score > best[start + length].score) best[start + length] = {score, token, start};
      });
      if (!whole_char_token && base + unknown_score_ > best[start + char_length].score)
        best[start + char_length] = {base + unknown_score_, unknown_, start};
      start += char_length;
    }
    const size_t first = ids.size();
    bool previous_unknown = false;
    for (size_t end = text.size(); end > 0; end = best[end].start) {
      const bool unknown = best[end].token == unknown_;
      if (!(unknown && previous_unknown)) ids.push_back(best[end].token);
      previous_unknown = unknown;
    }
    std::reverse(ids.begin() + static_cast<std::ptrdiff_t>(first), ids.end());
    return {};
  }

 private:
  Result<std::string> normalize(std::string_view input, bool space_prefix) const {
    std::string out;
    out.reserve(input.size() * 3 / 2 + 3);
    const bool prepend_space = space_prefix;
    const bool merge_spaces = vocabulary_.remove_extra_whitespaces;
    bool space_prepended = false, in_word = false;
    for (size_t offset = 0; offset < input.size();) {
      std::string_view replacement;
      size_t consumed = 0;
      bool corrupt = false;
      const auto rule = charsmap_ ? charsmap_->find(input.substr(offset), corrupt) : std::nullopt;
      if (corrupt) return charsmap_->longest_prefix(input.substr(offset)).status();
      if (rule) {
        replacement = rule->replacement;
        consumed = rule->consumed;
      } else {
        consumed = std::min(unicode::sequence_length(input[offset]), input.size() - offset);
        replacement = input.substr(offset, consumed);
      }
      for (const char c : replacement) {
        if (c != ' ') {
          // A word starts: it gets its separating space here, so that
          // trailing spaces never get one (llama.cpp's rule: with merging,
          // every word gets exactly one, the first one included).
          if (!in_word && ((prepend_space && !space_prepended) || merge_spaces)) {
            out.append(unicode::kEscapedSpace);
            space_prepended = true;
          }
          in_word = true;
          out += c;
        } else {
          in_word = false;
          if (!merge_spaces) out.append(unicode::kEscapedSpace);
        }
      }
      offset += consumed;
    }
    return out;
  }

  const Vocabulary& vocabulary_;
  std::optional<PrecompiledCharsmap> charsmap_;
  int32_t unknown_ = 0;
  double unknown_score_ = 0;
  ByteTrie pieces_;  // normal, user-defined and unused tokens
};

}  // namespace

Result<std::unique_ptr<TextModel>> make_unigram(const Vocabulary& vocabulary) {
  if (!vocabulary.unknown)
    return malformed_input("tokenizer.ggml.unknown_token_id is required by the unigram (t5) model");
  std::optional<PrecompiledCharsmap> charsmap;
  if (!vocabulary.precompiled_charsmap.empty()) {
    ATTENDRE_TRY_ASSIGN(charsmap, PrecompiledCharsmap::parse(vocabulary.precompiled_charsmap));
  }
  return std::unique_ptr<TextModel>(std::make_unique<Unigram>(vocabulary, std::move(charsmap)));
}

}  // namespace attendre::tokenizer
