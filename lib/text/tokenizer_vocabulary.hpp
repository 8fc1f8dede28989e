// The checks every Vocabulary passes before a model is built on it, and the
// text -> id index all models share.
#pragma once

#include "text/tokenizer.hpp"

#include <attendre/status.hpp>

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>

namespace attendre::tokenizer {

// Fails malformed_input naming the GGUF key of the first problem: array
// lengths that disagree, a type outside 0..6, a NaN score, a special id out
// of range, add_bos/add_eos without the id, a byte token not spelled <0xXX>.
Status validate(const Vocabulary& vocabulary);

// Fails malformed_input "<key> = <value> is outside the N tokens" unless
// 0 <= id < token_count.
Status check_token_id(int64_t id, size_t token_count, std::string_view key);

TokenType token_type(const Vocabulary& vocabulary, int32_t id);  // normal when there is no type array
// Control, user-defined or unknown: the types whose text is split out of raw
// text (user-defined always, the others when special tokens are parsed).
bool is_special(TokenType type);
float token_score(const Vocabulary& vocabulary, int32_t id);     // 0 when there is no score array
// The byte a token spelled <0xXX> stands for (checked by validate for byte tokens).
std::optional<uint8_t> byte_of_token(std::string_view text);

// Text -> id, viewing the Vocabulary's strings (which must outlive it).
class TokenIndex {
 public:
  // Fails malformed_input when two tokens share a text. Empty texts (which
  // no text can produce) are left out.
  static Result<TokenIndex> build(const Vocabulary& vocabulary);
  TokenIndex() = default;  // empty: find gives -1
  int32_t find(std::string_view text) const;  // -1 when absent

 private:
  std::unordered_map<std::string_view, int32_t> ids_;
};

}  // namespace attendre::tokenizer
