// Fuzz target: the tokenizers on arbitrary bytes. When the first byte has
// bit 7 set, the rest is a GGUF file whose vocabulary must give a tokenizer
// that passes the checks below on a fixed text, or be refused in one line
// as malformed or unsupported, naming the file. Otherwise the first byte
// picks the options (bit 0: parse special tokens; bit 1: add BOS/EOS) and
// the rest is the text, encoded by every tokenizer: built-in tiny
// vocabularies of the three models (always), and the real llama-bpe,
// llama-spm and nomic-bert-moe vocabularies when ../shared/models is found
// beside the source tree (or ATTENDRE_FUZZ_MODELS names the folder).
//
// What must hold: invalid UTF-8 is refused with a one-line invalid_argument
// naming the offset of the first bad byte, and the text before it encodes;
// valid text encodes to ids in range without throwing; byte-level and
// SentencePiece BPE give the text back on decoding; without a charsmap,
// the unigram model's decoding (its normalised text) encodes to the same
// ids again. (Text with U+2581, which SentencePiece reads as its escaped
// space, is exempt from the last two.)
#include "fuzz_check.hpp"
#include "gguf/gguf.hpp"
#include "text/tokenizer.hpp"
#include "text/tokenizer_unicode.hpp"

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace {

using namespace attendre::tokenizer;

void add_token(Vocabulary& vocabulary, std::string text, TokenType type, float score) {
  vocabulary.tokens.push_back(std::move(text));
  vocabulary.types.push_back(type);
  vocabulary.scores.push_back(score);
}

// Byte-level BPE with merges that spell a few words, a control token and a
// user-defined one, under Llama 3's pre-tokenizer.
Vocabulary tiny_byte_level() {
  Vocabulary vocabulary;
  vocabulary.model = Model::byte_level_bpe;
  vocabulary.pre = "llama-bpe";
  const auto& alphabet = unicode::byte_level_alphabet();
  for (const std::string& character : alphabet) add_token(vocabulary, character, TokenType::normal, 0);
  for (const std::string word : {" the", "ing", " and", "  ", "\n\n", "123", "\xC3\xA9t\xC3\xA9", "\xF0\x9F\xA6\x99"}) {
    std::string built = alphabet[static_cast<uint8_t>(word[0])];
    for (size_t i = 1; i < word.size(); ++i) {
      const std::string& next = alphabet[static_cast<uint8_t>(word[i])];
      const bool known = std::find(vocabulary.tokens.begin(), vocabulary.tokens.end(), built + next) != vocabulary.tokens.end();
      if (!known) {
        vocabulary.merges.push_back(built + " " + next);
        add_token(vocabulary, built + next, TokenType::normal, 0);
      }
      built += next;
    }
  }
  add_token(vocabulary, "<|end|>", TokenType::control, 0);
  add_token(vocabulary, "<tool>", TokenType::user_defined, 0);
  vocabulary.bos = vocabulary.eos = static_cast<int32_t>(vocabulary.tokens.size()) - 2;
  return vocabulary;
}

// Three special tokens (ids 0..2), the 256 <0xXX> tokens when asked for,
// then `pieces` (spaces escaped) with scores falling by `step`.
Vocabulary scored(Model model, const std::array<std::pair<const char*, TokenType>, 3>& specials, bool byte_tokens,
                  std::initializer_list<std::string> pieces, float step) {
  Vocabulary vocabulary;
  vocabulary.model = model;
  for (const auto& [text, type] : specials) add_token(vocabulary, text, type, 0);
  for (int byte = 0; byte_tokens && byte < 256; ++byte) {
    char name[8];
    std::snprintf(name, sizeof name, "<0x%02X>", byte);
    add_token(vocabulary, name, TokenType::byte, 0);
  }
  float score = -1;
  for (const std::string& piece : pieces) add_token(vocabulary, unicode::escape_spaces(piece), TokenType::normal, score -= step);
  return vocabulary;
}

// SentencePiece BPE with byte fallback, BOS and a space prefix.
Vocabulary tiny_sentencepiece() {
  Vocabulary vocabulary = scored(
      Model::sentencepiece_bpe, {{{"<unk>", TokenType::unknown}, {"<s>", TokenType::control}, {"</s>", TokenType::control}}},
      true, {" ", "e", "t", "h", "a", " t", "he", " the", "in", "ing", " a", "\xC3\xA9", "  "}, 0.25f);
  vocabulary.unknown = 0, vocabulary.bos = 1, vocabulary.eos = 2;
  vocabulary.add_bos = vocabulary.add_space_prefix = true;
  return vocabulary;
}

// Unigram with whitespace normalisation and no charsmap.
Vocabulary tiny_unigram() {
  Vocabulary vocabulary = scored(
      Model::unigram, {{{"<pad>", TokenType::control}, {"</s>", TokenType::control}, {"<unk>", TokenType::unknown}}}, false,
      {" ", " a", "a", "b", "ab", " ab", "ba", "c", " c", "\xE6\x97\xA5", "1", "11"}, 0.5f);
  vocabulary.padding = 0, vocabulary.eos = 1, vocabulary.unknown = 2;
  vocabulary.add_eos = vocabulary.add_space_prefix = vocabulary.remove_extra_whitespaces = true;
  return vocabulary;
}

std::filesystem::path models_folder() {
  if (const char* folder = std::getenv("ATTENDRE_FUZZ_MODELS")) return folder;
  return std::filesystem::path(__FILE__).parent_path().parent_path().parent_path() / "shared" / "models";
}

std::vector<Pipeline> load_tokenizers() {
  std::vector<Pipeline> tokenizers;
  tokenizers.push_back(Pipeline::build(tiny_byte_level()).value_or_throw());
  tokenizers.push_back(Pipeline::build(tiny_sentencepiece()).value_or_throw());
  tokenizers.push_back(Pipeline::build(tiny_unigram()).value_or_throw());
  const std::filesystem::path vocab = models_folder() / "vocab";
  for (const char* name : {"ggml-vocab-llama-bpe.gguf", "ggml-vocab-llama-spm.gguf", "ggml-vocab-nomic-bert-moe.gguf"}) {
    std::error_code error;
    if (std::filesystem::is_regular_file(vocab / name, error))
      tokenizers.push_back(Pipeline::from_gguf(attendre::gguf::File::open(vocab / name).value_or_throw()).value_or_throw());
  }
  return tokenizers;
}

void check_invalid(const Pipeline& tokenizer, const std::string& text, size_t offset) {
  const attendre::Result<std::vector<int32_t>> refused = tokenizer.encode(text);
  attendre::fuzz::check(!refused.ok(), "invalid UTF-8 is refused");
  const std::string& message = refused.status().message();
  attendre::fuzz::check(refused.status().code() == attendre::ErrorCode::invalid_argument, "invalid UTF-8 is invalid_argument",
                        message);
  attendre::fuzz::check(message.find("byte offset " + std::to_string(offset)) != std::string::npos,
                        "the message names the first bad byte", message);
  attendre::fuzz::check_one_line(message);
  (void)tokenizer.encode(text.substr(0, offset)).value_or_throw();  // the valid prefix encodes
}

void check_valid(const Pipeline& tokenizer, const std::string& text, bool parse_special, bool add_special) {
  const bool bos = add_special && tokenizer.bos(), eos = add_special && tokenizer.eos();
  const std::vector<int32_t> with_special =
      tokenizer.encode(text, {.add_bos = bos, .add_eos = eos, .parse_special = parse_special}).value_or_throw();
  for (const int32_t id : with_special) attendre::fuzz::check(id >= 0 && id < tokenizer.size(), "ids are in range");
  attendre::fuzz::check(!bos || with_special.front() == *tokenizer.bos(), "BOS comes first");
  attendre::fuzz::check(!eos || with_special.back() == *tokenizer.eos(), "EOS comes last");
  // Round trips without BOS/EOS, which would come back as text.
  const EncodeOptions plain{.add_bos = false, .add_eos = false, .parse_special = parse_special};
  const std::vector<int32_t> ids = tokenizer.encode(text, plain).value_or_throw();
  const std::string decoded = tokenizer.decode(ids, {.render_special = parse_special}).value_or_throw();
  // SentencePiece and unigram write spaces as U+2581, so a U+2581 in the text comes back as a space.
  if (tokenizer.vocabulary().model != Model::byte_level_bpe && text.find(unicode::kEscapedSpace) != std::string::npos)
    return;
  if (tokenizer.vocabulary().model == Model::unigram) {
    // Decoding gives the normalised text, which normalises to itself; but
    // unknown tokens lose the characters they replace, normalising can make
    // special-token text ("<\x0Fs>" -> "<s>") that parse_special would then
    // claim, and a charsmap's longest-prefix rules are not idempotent (a
    // control character it deletes between "u" and U+0301 leaves them
    // uncomposed until a second pass), as in SentencePiece itself.
    if (parse_special || !tokenizer.vocabulary().precompiled_charsmap.empty()) return;
    for (const int32_t id : ids)
      if (tokenizer.type(id).value_or_throw() == TokenType::unknown) return;
    attendre::fuzz::check(tokenizer.encode(decoded, plain).value_or_throw() == ids, "unigram: decoded text encodes to the same ids",
                          unicode::printable(text, 200) + " -> " + unicode::printable(decoded, 200));
    return;
  }
  attendre::fuzz::check(decoded == text, "decode(encode(text)) == text",
                        unicode::printable(text, 200) + " -> " + unicode::printable(decoded, 200));
}

// The rest of the input as a GGUF file: a tokenizer is built from its
// vocabulary, or it is refused in one line as malformed or unsupported,
// naming the file. A vocabulary it accepts encodes a fixed text to ids in
// range, or says in one line that it cannot (no token for a byte); round
// trips are not expected of arbitrary vocabularies.
void check_vocabulary(const uint8_t* data, size_t size) {
  const auto refused = [](const attendre::Error& e, bool building) {
    const std::string message = e.what();
    const bool expected = e.code() == attendre::ErrorCode::malformed_input || (building && e.code() == attendre::ErrorCode::unsupported);
    attendre::fuzz::check(expected, "a vocabulary is refused as malformed or unsupported", message);
    attendre::fuzz::check(!building || message.rfind("fuzz.gguf: ", 0) == 0, "refusals name the file", message);
    attendre::fuzz::check_one_line(message);
  };
  const std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(data), size);
  std::optional<Pipeline> tokenizer;
  try {
    tokenizer.emplace(Pipeline::from_gguf(attendre::gguf::File::parse(bytes, "fuzz.gguf").value_or_throw()).value_or_throw());
  } catch (const attendre::Error& e) {
    refused(e, true);
    return;
  }
  for (const bool parse_special : {false, true}) {
    try {
      const std::vector<int32_t> ids =
          tokenizer->encode("Hello world! \xC3\xA9t\xC3\xA9 <s>\xE6\x97\xA5\xF0\x9F\xA6\x99 123", {.parse_special = parse_special})
              .value_or_throw();
      for (const int32_t id : ids) attendre::fuzz::check(id >= 0 && id < tokenizer->size(), "ids are in range");
      (void)tokenizer->decode(ids, {.render_special = parse_special, .clean_up_spaces = true}).value_or_throw();
    } catch (const attendre::Error& e) {
      refused(e, false);
    }
  }
}

const std::vector<Pipeline>& loaded_tokenizers() {
  static const std::vector<Pipeline> tokenizers = load_tokenizers();
  return tokenizers;
}

}  // namespace

// The tokenizers are built before the first input: the 250K-token unigram
// trie takes seconds under the sanitizers on a loaded machine, which must
// not count against libFuzzer's per-input timeout (it did once, on the
// empty input).
extern "C" int LLVMFuzzerInitialize(int*, char***) {
  (void)loaded_tokenizers();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::vector<Pipeline>& tokenizers = loaded_tokenizers();
  if (size == 0) return 0;
  if ((data[0] & 0x80) != 0) {
    check_vocabulary(data + 1, size - 1);
    return 0;
  }
  const bool parse_special = (data[0] & 1) != 0, add_special = (data[0] & 2) != 0;
  const std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
  const auto invalid = unicode::first_invalid_utf8(text);
  for (const Pipeline& tokenizer : tokenizers) {
    if (invalid)
      check_invalid(tokenizer, text, *invalid);
    else
      check_valid(tokenizer, text, parse_special, add_special);
  }
  return 0;
}
