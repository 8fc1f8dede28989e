// Small hand-built vocabularies for the tokenizer tests, laid out as the
// converters lay out real ones, and lookups that fail the test when a token
// is missing.
#pragma once

#include "gguf_test_support.hpp"
#include "text/tokenizer.hpp"
#include "text/tokenizer_unicode.hpp"

#include <doctest/doctest.h>

#include <cstdio>
#include <string>
#include <utility>
#include <vector>

namespace attendre::test::tokenizer {

using namespace attendre::tokenizer;

inline const EncodeOptions kRaw{.add_bos = false, .add_eos = false};

inline int32_t id_of(const Pipeline& tokenizer, std::string_view text) {
  const auto id = tokenizer.find(text);
  REQUIRE_MESSAGE(id, "no token '" << std::string(text) << "'");
  return *id;
}

inline std::vector<int32_t> ids_of(const Pipeline& tokenizer, std::initializer_list<std::string_view> texts) {
  std::vector<int32_t> ids;
  for (const std::string_view text : texts) ids.push_back(id_of(tokenizer, text));
  return ids;
}

inline void add(Vocabulary& vocabulary, std::string text, TokenType type, float score = 0) {
  vocabulary.tokens.push_back(std::move(text));
  vocabulary.types.push_back(type);
  vocabulary.scores.push_back(score);
}

// <unk> <s> </s>, the 256 byte tokens (when `bytes`), then `pieces`, as a
// SentencePiece conversion lays them out.
inline Vocabulary spm_vocabulary(const std::vector<std::pair<std::string, float>>& pieces, bool bytes = true) {
  Vocabulary vocabulary;
  vocabulary.model = Model::sentencepiece_bpe;
  add(vocabulary, "<unk>", TokenType::unknown);
  add(vocabulary, "<s>", TokenType::control);
  add(vocabulary, "</s>", TokenType::control);
  for (int byte = 0; bytes && byte < 256; ++byte) {
    char name[8];
    std::snprintf(name, sizeof name, "<0x%02X>", byte);
    add(vocabulary, name, TokenType::byte);
  }
  for (const auto& [text, score] : pieces) add(vocabulary, attendre::tokenizer::unicode::escape_spaces(text), TokenType::normal, score);
  vocabulary.unknown = 0, vocabulary.bos = 1, vocabulary.eos = 2;
  vocabulary.add_bos = true, vocabulary.add_space_prefix = true;
  return vocabulary;
}

// The 256 byte-level characters, then the result of each merge (named in
// plain bytes: spaces are written as the byte-level 'Ġ' for you).
inline Vocabulary bpe_vocabulary(const std::vector<std::pair<std::string, std::string>>& merges, std::string pre = "gpt-2") {
  const auto& alphabet = attendre::tokenizer::unicode::byte_level_alphabet();
  const auto encode = [&](const std::string& bytes) {
    std::string mapped;
    for (const char byte : bytes) mapped += alphabet[static_cast<uint8_t>(byte)];
    return mapped;
  };
  Vocabulary vocabulary;
  vocabulary.model = Model::byte_level_bpe;
  vocabulary.pre = std::move(pre);
  for (const std::string& character : alphabet) vocabulary.tokens.push_back(character);
  for (const auto& [left, right] : merges) {
    vocabulary.merges.push_back(encode(left) + " " + encode(right));
    vocabulary.tokens.push_back(encode(left + right));
  }
  return vocabulary;
}

// <pad> </s> <unk>, then `pieces` (spaces written as U+2581 for you).
inline Vocabulary unigram_vocabulary(const std::vector<std::pair<std::string, float>>& pieces) {
  Vocabulary vocabulary;
  vocabulary.model = Model::unigram;
  add(vocabulary, "<pad>", TokenType::control);
  add(vocabulary, "</s>", TokenType::control);
  add(vocabulary, "<unk>", TokenType::unknown);
  for (const auto& [text, score] : pieces) add(vocabulary, attendre::tokenizer::unicode::escape_spaces(text), TokenType::normal, score);
  vocabulary.padding = 0, vocabulary.eos = 1, vocabulary.unknown = 2;
  return vocabulary;
}


}  // namespace attendre::test::tokenizer
