// SentencePiece's BPE (tokenizer.ggml.model = "llama"): start from single
// characters and keep merging the adjacent pair whose concatenation is the
// highest-scoring token (ties: the leftmost pair), as SentencePiece's
// bpe_model.cc and llama.cpp's llm_tokenizer_spm do. A priority queue of
// candidate pairs, with stale entries skipped when popped, makes this
// O(n log n) instead of rescanning the text after every merge.
//
// Characters left without a token fall back to the <0xXX> byte tokens; a
// vocabulary without all 256 of them gives the unknown token instead, one
// per character, as SentencePiece without byte_fallback does.
#include "core/try.hpp"
#include "text/tokenizer_models.hpp"
#include "text/tokenizer_unicode.hpp"

#include <algorithm>
#include <array>
#include <cstdio>
#include <queue>
#include <unordered_map>

namespace attendre::tokenizer {
namespace {

struct Symbol {
  uint32_t begin = 0;
  uint32_t length = 0;  // 0 once merged into its left neighbour
  int32_t prev = -1, next = -1;
};

struct Bigram {
  float score = 0;
  int32_t left = 0, right = 0;
  uint32_t length = 0;  // of the concatenation, to recognise stale entries
};

struct LowerPriority {
  bool operator()(const Bigram& a, const Bigram& b) const {
    return a.score < b.score || (a.score == b.score && a.left > b.left);
  }
};

class SentencePieceBpe final : public TextModel {
 public:
  SentencePieceBpe(const Vocabulary& vocabulary, const TokenIndex& index)
      : vocabulary_(vocabulary), index_(index), unknown_(vocabulary.unknown.value_or(-1)) {
    byte_fallback_ = true;
    for (uint32_t byte = 0; byte < 256; ++byte) {
      char name[8];
      std::snprintf(name, sizeof name, "<0x%02X>", byte);
      byte_tokens_[byte] = index.find(name);
      byte_fallback_ = byte_fallback_ && byte_tokens_[byte] >= 0;
    }
  }

  Status encode(std::string_view fragment, bool space_prefix, std::vector<int32_t>& ids) const override {
    // add_space_prefix puts a space before every fragment, which llama.cpp
    // does at the start and after each special token: the only places a
    // fragment can start (bar text continuing a document encoded before).
    std::string text = space_prefix ? " " : "";
    text.append(fragment);
    text = unicode::escape_spaces(text);
    Session session(*this, text);
    return session.run(ids);
  }

 private:
  // A token a merge may produce: SentencePiece's "pieces" (normal,
  // user-defined, unused), never control, unknown or byte tokens.
  int32_t piece(std::string_view text) const {
    const int32_t id = index_.find(text);
    if (id < 0) return -1;
    switch (token_type(vocabulary_, id)) {
      case TokenType::normal:
      case TokenType::undefined:
      case TokenType::user_defined:
      case TokenType::unused: return id;
      default: return -1;
    }
  }

  class Session {
   public:
    Session(const SentencePieceBpe& model, std::string_view text) : model_(model), text_(text) {
      for (size_t offset = 0; offset < text.size();) {
        const size_t length = std::min(unicode::sequence_length(text[offset]), text.size() - offset);
        const auto index = static_cast<int32_t>(symbols_.size());
        symbols_.push_back({static_cast<uint32_t>(offset), static_cast<uint32_t>(length), index - 1,
                            offset + length == text.size() ? -1 : index + 1});
        offset += length;
      }
    }

    Status run(std::vector<int32_t>& ids) {
      for (int32_t i = 1; i < static_cast<int32_t>(symbols_.size()); ++i) try_pair(i - 1, i);
      while (!queue_.empty()) {
        const Bigram bigram = queue_.top();
        queue_.pop();
        Symbol& left = symbols_[bigram.left];
        Symbol& right = symbols_[bigram.right];
        if (left.length == 0 || right.length == 0 || left.length + right.length != bigram.length) continue;
        const int32_t merged = model_.piece(text_.substr(left.begin, bigram.length));
        if (token_type(model_.vocabulary_, merged) == TokenType::unused)
          unused_splits_[key(left.begin, bigram.length)] = left.length;
        left.length += right.length;
        right.length = 0;
        left.next = right.next;
        if (right.next >= 0) symbols_[right.next].prev = bigram.left;
        try_pair(left.prev, bigram.left);
        try_pair(bigram.left, left.next);
      }
      for (int32_t i = symbols_.empty() ? -1 : 0; i != -1; i = symbols_[i].next) {
        std::string_view unspellable;
        if (!emit(symbols_[i].begin, symbols_[i].length, ids, unspellable))
          return malformed_input("tokenizer: no token for '" + unicode::printable(unspellable) +
                                 "': the vocabulary has neither <0xXX> byte tokens nor an unknown token");
      }
      return {};
    }

   private:
    static uint64_t key(uint32_t begin, uint32_t length) { return (uint64_t{begin} << 32) | length; }

    void try_pair(int32_t left, int32_t right) {
      if (left < 0 || right < 0) return;
      const uint32_t length = symbols_[left].length + symbols_[right].length;
      const int32_t id = model_.piece(text_.substr(symbols_[left].begin, length));
      if (id < 0) return;
      queue_.push({token_score(model_.vocabulary_, id), left, right, length});
    }

    // SentencePiece outputs unused tokens as the two pieces they were
    // merged from, recursively; everything else that is not a piece falls
    // back to bytes (or the unknown token). False, with the text in
    // `unspellable`, when the vocabulary has no way to spell it.
    bool emit(uint32_t begin, uint32_t length, std::vector<int32_t>& ids, std::string_view& unspellable) const {
      const std::string_view text = text_.substr(begin, length);
      const int32_t id = model_.piece(text);
      if (id >= 0 && token_type(model_.vocabulary_, id) != TokenType::unused) {
        ids.push_back(id);
        return true;
      }
      if (const auto split = unused_splits_.find(key(begin, length)); split != unused_splits_.end())
        return emit(begin, split->second, ids, unspellable) &&
               emit(begin + split->second, length - split->second, ids, unspellable);
      if (model_.byte_fallback_) {
        for (const char byte : text) ids.push_back(model_.byte_tokens_[static_cast<uint8_t>(byte)]);
      } else if (model_.unknown_ >= 0) {
        ids.push_back(model_.unknown_);
      } else {
        unspellable = text;
        return false;
      }
      return true;
    }

    const SentencePieceBpe& model_;
    std::string_view text_;
    std::vector<Symbol> symbols_;
    std::priority_queue<Bigram, std::vector<Bigram>, LowerPriority> queue_;
    std::unordered_map<uint64_t, uint32_t> unused_splits_;  // (begin, length) -> length of the left part
  };

  const Vocabulary& vocabulary_;
  const TokenIndex& index_;
  int32_t unknown_;
  std::array<int32_t, 256> byte_tokens_{};
  bool byte_fallback_ = false;
};

}  // namespace

Result<std::unique_ptr<TextModel>> make_sentencepiece_bpe(const Vocabulary& vocabulary, const TokenIndex& index) {
  return std::unique_ptr<TextModel>(std::make_unique<SentencePieceBpe>(vocabulary, index));
}

}  // namespace attendre::tokenizer
