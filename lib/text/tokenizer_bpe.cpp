// Byte-level BPE (tokenizer.ggml.model = "gpt2"): the pre-tokenizer's
// regexes cut the text into words; each word's bytes start as the tokens of
// their byte-level characters, and the adjacent pair with the lowest merge
// rank is merged until no pair has a rank (ties: the leftmost pair), as in
// Hugging Face's BPE and llama.cpp's llm_tokenizer_bpe.
//
// Merges are resolved to token ids once, when the model is built, so that
// encoding compares integers instead of concatenating strings; a priority
// queue with stale entries skipped when popped keeps a word O(n log n).
#include "core/try.hpp"
#include "text/tokenizer_models.hpp"
#include "text/tokenizer_pretokenizers.hpp"
#include "text/tokenizer_regex.hpp"
#include "text/tokenizer_unicode.hpp"

#include <array>
#include <cstdio>
#include <queue>
#include <unordered_map>

namespace attendre::tokenizer {
namespace {

struct Merge {
  int32_t rank = 0;
  int32_t result = 0;  // id of the concatenation
};

struct Symbol {
  int32_t id = -1;  // -1: a byte whose character is not a token (never merges)
  int32_t prev = -1, next = -1;
  bool alive = true;
};

struct Bigram {
  int32_t rank = 0;
  int32_t left = 0, right = 0;        // symbol positions
  int32_t left_id = 0, right_id = 0;  // their ids when queued, to recognise stale entries
  int32_t result = 0;                 // the id they merge into
};

struct LowerPriority {
  bool operator()(const Bigram& a, const Bigram& b) const {
    return a.rank > b.rank || (a.rank == b.rank && a.left > b.left);
  }
};

uint64_t pair_key(int32_t left, int32_t right) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32) | static_cast<uint32_t>(right);
}

class ByteLevelBpe final : public TextModel {
 public:
  // The model of `vocabulary`: its pre-tokenizer's regexes compiled, its
  // merges resolved to ids.
  static Result<std::unique_ptr<TextModel>> make(const Vocabulary& vocabulary, const TokenIndex& index) {
    const PreTokenizerSpec* spec = find_pre_tokenizer(vocabulary.pre);
    if (spec == nullptr)
      return Status(ErrorCode::unsupported, "tokenizer.ggml.pre '" + unicode::printable(vocabulary.pre) +
                                                "' is not supported; supported: " + supported_pre_tokenizers());
    auto model = std::unique_ptr<ByteLevelBpe>(new ByteLevelBpe(vocabulary, index));
    for (const std::string_view pattern : spec->regexes) {
      ATTENDRE_TRY_ASSIGN(Regex regex, Regex::compile(pattern));
      model->regexes_.push_back(std::move(regex));
    }
    model->ignore_merges_ = spec->ignore_merges;
    const auto& alphabet = unicode::byte_level_alphabet();
    for (size_t byte = 0; byte < 256; ++byte) model->byte_tokens_[byte] = index.find(alphabet[byte]);
    ATTENDRE_TRY(model->resolve_merges(vocabulary.merges));
    return std::unique_ptr<TextModel>(std::move(model));
  }

  // Byte-level BPE never prefixes a space (llama.cpp ignores the flag here).
  Status encode(std::string_view fragment, bool /*space_prefix*/, std::vector<int32_t>& ids) const override {
    ATTENDRE_TRY_ASSIGN(const std::vector<std::string_view> words, split_in_sequence(fragment, regexes_));
    for (const std::string_view word : words) ATTENDRE_TRY(encode_word(word, ids));
    return {};
  }

 private:
  ByteLevelBpe(const Vocabulary& vocabulary, const TokenIndex& index)
      : index_(index), unknown_(vocabulary.unknown.value_or(-1)) {}

  Status resolve_merges(const std::vector<std::string>& merges) {
    merges_.reserve(merges.size());
    std::string joined;
    for (size_t rank = 0; rank < merges.size(); ++rank) {
      const std::string_view merge = merges[rank];
      const std::string where = "tokenizer.ggml.merges[" + std::to_string(rank) + "] '" + unicode::printable(merge) + "'";
      // As llama.cpp: the separator is the first space after the first byte,
      // so that a left part may itself be a space.
      const size_t space = merge.find(' ', 1);
      if (space == std::string_view::npos) return malformed_input(where + " is not two tokens and a space");
      const std::string_view left = merge.substr(0, space), right = merge.substr(space + 1);
      joined.assign(left).append(right);
      const int32_t left_id = index_.find(left), right_id = index_.find(right), result = index_.find(joined);
      if (left_id < 0 || right_id < 0 || result < 0)
        return malformed_input(where + " names a token the vocabulary lacks ('" +
                               unicode::printable(left_id < 0 ? left : right_id < 0 ? right : std::string_view(joined)) +
                               "')");
      merges_.emplace(pair_key(left_id, right_id), Merge{static_cast<int32_t>(rank), result});  // first rank wins
    }
    return {};
  }

  Status encode_word(std::string_view word, std::vector<int32_t>& ids) const {
    const auto& alphabet = unicode::byte_level_alphabet();
    if (ignore_merges_) {
      // Llama 3's tokenizer takes a word that is a whole token as it is,
      // even where the merges would split it differently.
      std::string mapped;
      for (const char byte : word) mapped += alphabet[static_cast<uint8_t>(byte)];
      if (const int32_t id = index_.find(mapped); id >= 0) {
        ids.push_back(id);
        return {};
      }
    }
    std::vector<Symbol> symbols(word.size());
    const auto count = static_cast<int32_t>(word.size());
    for (int32_t i = 0; i < count; ++i)
      symbols[i] = {byte_tokens_[static_cast<uint8_t>(word[i])], i - 1, i + 1 < count ? i + 1 : -1, true};
    std::priority_queue<Bigram, std::vector<Bigram>, LowerPriority> queue;
    const auto try_pair = [&](int32_t left, int32_t right) {
      if (left < 0 || right < 0 || symbols[left].id < 0 || symbols[right].id < 0) return;
      const auto found = merges_.find(pair_key(symbols[left].id, symbols[right].id));
      if (found != merges_.end())
        queue.push({found->second.rank, left, right, symbols[left].id, symbols[right].id, found->second.result});
    };
    for (int32_t i = 1; i < count; ++i) try_pair(i - 1, i);
    while (!queue.empty()) {
      const Bigram bigram = queue.top();
      queue.pop();
      Symbol& left = symbols[bigram.left];
      Symbol& right = symbols[bigram.right];
      if (!left.alive || !right.alive || left.id != bigram.left_id || right.id != bigram.right_id) continue;
      left.id = bigram.result;
      right.alive = false;
      left.next = right.next;
      if (right.next >= 0) symbols[right.next].prev = bigram.left;
      try_pair(left.prev, bigram.left);
      try_pair(bigram.left, left.next);
    }
    for (int32_t i = count > 0 ? 0 : -1; i != -1; i = symbols[i].next) {
      if (symbols[i].id >= 0) {
        ids.push_back(symbols[i].id);
      } else if (unknown_ >= 0) {
        ids.push_back(unknown_);
      } else {
        char byte[8];
        std::snprintf(byte, sizeof byte, "0x%02X", static_cast<uint8_t>(word[i]));
        return malformed_input(std::string("tokenizer: the vocabulary has no token for byte ") + byte +
                               " and no unknown token");
      }
    }
    return {};
  }

  const TokenIndex& index_;
  int32_t unknown_;
  std::vector<Regex> regexes_;
  bool ignore_merges_ = false;
  std::array<int32_t, 256> byte_tokens_{};
  std::unordered_map<uint64_t, Merge> merges_;  // (left id, right id) -> rank and result
};

}  // namespace

Result<std::unique_ptr<TextModel>> make_byte_level_bpe(const Vocabulary& vocabulary, const TokenIndex& index) {
  return ByteLevelBpe::make(vocabulary, index);
}

}  // namespace attendre::tokenizer
