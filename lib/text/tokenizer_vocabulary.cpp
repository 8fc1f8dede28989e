#include "core/try.hpp"
#include "text/tokenizer_vocabulary.hpp"

#include "text/tokenizer_unicode.hpp"

#include <cmath>
#include <limits>

namespace attendre::tokenizer {
namespace {

Status malformed(std::string message) { return malformed_input(std::move(message)); }

Status check_length(size_t length, size_t token_count, std::string_view key) {
  if (length != 0 && length != token_count)
    return malformed(std::string(key) + " has " + std::to_string(length) + " entries for " + std::to_string(token_count) +
                     " tokens");
  return {};
}

Status check_optional_id(const std::optional<int32_t>& id, size_t token_count, std::string_view key) {
  if (id) return check_token_id(*id, token_count, key);
  return {};
}

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

}  // namespace

Status check_token_id(int64_t id, size_t token_count, std::string_view key) {
  if (id < 0 || static_cast<uint64_t>(id) >= token_count)
    return malformed(std::string(key) + " = " + std::to_string(id) + " is outside the " + std::to_string(token_count) +
                     " tokens");
  return {};
}

Status validate(const Vocabulary& vocabulary) {
  const size_t count = vocabulary.tokens.size();
  if (count == 0) return malformed("tokenizer.ggml.tokens is empty");
  if (count > static_cast<size_t>(std::numeric_limits<int32_t>::max()))
    return malformed("tokenizer.ggml.tokens has " + std::to_string(count) + " tokens, more than int32 ids can name");
  ATTENDRE_TRY(check_length(vocabulary.scores.size(), count, "tokenizer.ggml.scores"));
  ATTENDRE_TRY(check_length(vocabulary.types.size(), count, "tokenizer.ggml.token_type"));
  for (size_t i = 0; i < vocabulary.scores.size(); ++i)
    if (std::isnan(vocabulary.scores[i])) return malformed("tokenizer.ggml.scores[" + std::to_string(i) + "] is NaN");
  for (size_t i = 0; i < vocabulary.types.size(); ++i) {
    const auto type = static_cast<int32_t>(vocabulary.types[i]);
    if (type < 0 || type > static_cast<int32_t>(TokenType::byte))
      return malformed("tokenizer.ggml.token_type[" + std::to_string(i) + "] = " + std::to_string(type) +
                       " is not a token type (0..6)");
    if (vocabulary.types[i] == TokenType::byte && !byte_of_token(vocabulary.tokens[i]))
      return malformed("tokenizer.ggml.token_type[" + std::to_string(i) + "] is byte but the token is '" +
                       unicode::printable(vocabulary.tokens[i]) + "', not <0xXX>");
  }
  ATTENDRE_TRY(check_optional_id(vocabulary.bos, count, "tokenizer.ggml.bos_token_id"));
  ATTENDRE_TRY(check_optional_id(vocabulary.eos, count, "tokenizer.ggml.eos_token_id"));
  ATTENDRE_TRY(check_optional_id(vocabulary.unknown, count, "tokenizer.ggml.unknown_token_id"));
  ATTENDRE_TRY(check_optional_id(vocabulary.padding, count, "tokenizer.ggml.padding_token_id"));
  if (vocabulary.add_bos && !vocabulary.bos)
    return malformed("tokenizer.ggml.add_bos_token is true but tokenizer.ggml.bos_token_id is absent");
  if (vocabulary.add_eos && !vocabulary.eos)
    return malformed("tokenizer.ggml.add_eos_token is true but tokenizer.ggml.eos_token_id is absent");
  for (const int32_t id : vocabulary.lstrip) ATTENDRE_TRY(check_token_id(id, count, "lstrip token id"));
  for (const int32_t id : vocabulary.rstrip) ATTENDRE_TRY(check_token_id(id, count, "rstrip token id"));
  return {};
}

TokenType token_type(const Vocabulary& vocabulary, int32_t id) {
  return vocabulary.types.empty() ? TokenType::normal : vocabulary.types[static_cast<size_t>(id)];
}

bool is_special(TokenType type) {
  return type == TokenType::control || type == TokenType::user_defined || type == TokenType::unknown;
}

float token_score(const Vocabulary& vocabulary, int32_t id) {
  return vocabulary.scores.empty() ? 0.0f : vocabulary.scores[static_cast<size_t>(id)];
}

std::optional<uint8_t> byte_of_token(std::string_view text) {
  if (text.size() != 6 || text.substr(0, 3) != "<0x" || text[5] != '>') return std::nullopt;
  const int high = hex_digit(text[3]), low = hex_digit(text[4]);
  if (high < 0 || low < 0) return std::nullopt;
  return static_cast<uint8_t>(high * 16 + low);
}

Result<TokenIndex> TokenIndex::build(const Vocabulary& vocabulary) {
  TokenIndex index;
  auto& ids_ = index.ids_;
  ids_.reserve(vocabulary.tokens.size());
  for (size_t id = 0; id < vocabulary.tokens.size(); ++id) {
    const std::string& text = vocabulary.tokens[id];
    if (text.empty()) continue;
    const auto [existing, inserted] = ids_.emplace(text, static_cast<int32_t>(id));
    if (!inserted)
      return malformed("tokenizer.ggml.tokens has '" + unicode::printable(text) + "' twice, at ids " +
                       std::to_string(existing->second) + " and " + std::to_string(id));
  }
  return index;
}

int32_t TokenIndex::find(std::string_view text) const {
  const auto found = ids_.find(text);
  return found == ids_.end() ? -1 : found->second;
}

}  // namespace attendre::tokenizer
