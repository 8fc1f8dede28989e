// What the tokenizers refuse, each with its code and a one-line message
// that names the problem: invalid UTF-8 (with its byte offset), ids out of
// range, BOS/EOS the vocabulary lacks, and malformed vocabularies, whether
// built by hand or read from a GGUF file (naming the key).
#include "test_tokenizer_support.hpp"

#include <functional>
#include <limits>

namespace gguf = attendre::gguf;
using attendre::ErrorCode;
using attendre::test::check_error;
using attendre::test::check_failure;
using gguf::MetadataValue;
using namespace attendre::tokenizer;
using namespace attendre::test::tokenizer;

TEST_CASE("tokenizer errors: invalid UTF-8 is refused with the offset of its first bad byte") {
  const Pipeline tokenizer = Pipeline::build(bpe_vocabulary({})).value_or_throw();
  const std::pair<std::string, size_t> cases[] = {
      {"abc\xFF", 3},                  // a byte that never occurs in UTF-8
      {"\x80", 0},                     // a lone continuation byte
      {"\xC0\xAF", 0},                 // an overlong '/'
      {"\xE0\x80\xAF", 0},             // an overlong '/' in three bytes
      {"ab\xED\xA0\x80", 2},           // a surrogate
      {"\xE2\x82", 0},                 // cut short
      {"\xE2\x82xx", 0},               // a lead byte followed by ASCII
      {"x\xF4\x90\x80\x80", 1},        // past U+10FFFF
      {"\xC3\xA9\xC3", 2},             // cut short after a valid character
      {"ok \xF0\x9F\xA6\x99 \xF8", 8},  // a five-byte lead after an emoji
  };
  for (const auto& [text, offset] : cases) {
    CAPTURE(text);
    check_failure(tokenizer.encode(text), ErrorCode::invalid_argument,
                "invalid UTF-8 at byte offset " + std::to_string(offset));
  }
  CHECK(tokenizer.encode(std::string("a\0b", 3), kRaw).value_or_throw().size() == 3);  // NUL is valid UTF-8
}

TEST_CASE("tokenizer errors: ids out of range, BOS or EOS the vocabulary lacks") {
  const Pipeline tokenizer = Pipeline::build(bpe_vocabulary({})).value_or_throw();
  const std::vector<int32_t> ids = {5, 256};
  check_failure(tokenizer.decode(ids), ErrorCode::invalid_argument,
              "id 256 at position 1 is outside the 256 tokens");
  check_failure(tokenizer.piece(-1), ErrorCode::invalid_argument, "id -1 is outside the 256 tokens");
  check_failure(tokenizer.type(1000), ErrorCode::invalid_argument, "id 1000 is outside");
  check_failure(tokenizer.encode("a", {.add_bos = true}), ErrorCode::invalid_argument, "BOS asked for");
  check_failure(tokenizer.encode("a", {.add_eos = true}), ErrorCode::invalid_argument, "EOS asked for");
}

TEST_CASE("tokenizer errors: malformed vocabularies name the GGUF key") {
  struct Case {
    const char* what;
    std::function<Vocabulary()> make;
    ErrorCode code;
    std::string needle;
  };
  const auto spm = [](std::function<void(Vocabulary&)> change) {
    return [change] {
      Vocabulary vocabulary = spm_vocabulary({{" ", -1}, {"a", -1}});
      change(vocabulary);
      return vocabulary;
    };
  };
  const Case cases[] = {
      {"no tokens", [] { return Vocabulary{}; }, ErrorCode::malformed_input, "tokenizer.ggml.tokens is empty"},
      {"scores", spm([](Vocabulary& v) { v.scores.pop_back(); }), ErrorCode::malformed_input,
       "tokenizer.ggml.scores has 260 entries for 261 tokens"},
      {"types", spm([](Vocabulary& v) { v.types.push_back(TokenType::normal); }), ErrorCode::malformed_input,
       "tokenizer.ggml.token_type has 262 entries for 261 tokens"},
      {"type value", spm([](Vocabulary& v) { v.types[4] = static_cast<TokenType>(9); }), ErrorCode::malformed_input,
       "tokenizer.ggml.token_type[4] = 9 is not a token type"},
      {"NaN score", spm([](Vocabulary& v) { v.scores[7] = std::numeric_limits<float>::quiet_NaN(); }),
       ErrorCode::malformed_input, "tokenizer.ggml.scores[7] is NaN"},
      {"bos id", spm([](Vocabulary& v) { v.bos = 261; }), ErrorCode::malformed_input,
       "tokenizer.ggml.bos_token_id = 261 is outside the 261 tokens"},
      {"unknown id", spm([](Vocabulary& v) { v.unknown = -3; }), ErrorCode::malformed_input,
       "tokenizer.ggml.unknown_token_id = -3 is outside"},
      {"add_bos without bos", spm([](Vocabulary& v) { v.bos.reset(); }), ErrorCode::malformed_input,
       "tokenizer.ggml.add_bos_token is true but tokenizer.ggml.bos_token_id is absent"},
      {"duplicate", spm([](Vocabulary& v) { v.tokens[260] = "<s>"; }), ErrorCode::malformed_input,
       "tokenizer.ggml.tokens has '<s>' twice, at ids 1 and 260"},
      {"byte token", spm([](Vocabulary& v) { v.tokens[3] = "<0xZZ>"; }), ErrorCode::malformed_input,
       "tokenizer.ggml.token_type[3] is byte but the token is '<0xZZ>', not <0xXX>"},
      {"merge without space", [] { Vocabulary v = bpe_vocabulary({{"a", "b"}}); v.merges[0] = "ab"; return v; },
       ErrorCode::malformed_input, "tokenizer.ggml.merges[0] 'ab' is not two tokens and a space"},
      {"merge of unknown tokens", [] { Vocabulary v = bpe_vocabulary({{"a", "b"}}); v.merges.push_back("ab zz"); return v; },
       ErrorCode::malformed_input, "tokenizer.ggml.merges[1] 'ab zz' names a token the vocabulary lacks ('zz')"},
      {"merge result unknown", [] { Vocabulary v = bpe_vocabulary({{"a", "b"}}); v.merges.push_back("b a"); return v; },
       ErrorCode::malformed_input, "names a token the vocabulary lacks ('ba')"},
      {"unigram without unknown", [] { Vocabulary v = unigram_vocabulary({{"a", -1}}); v.unknown.reset(); return v; },
       ErrorCode::malformed_input, "tokenizer.ggml.unknown_token_id is required"},
      {"charsmap header", [] { Vocabulary v = unigram_vocabulary({{"a", -1}}); v.precompiled_charsmap = "ab"; return v; },
       ErrorCode::malformed_input, "tokenizer.ggml.precompiled_charsmap: is 2 bytes, too short"},
      {"charsmap trie size",
       [] { Vocabulary v = unigram_vocabulary({{"a", -1}}); v.precompiled_charsmap = std::string("\x10\0\0\0abc", 7); return v; },
       ErrorCode::malformed_input, "trie of 16 bytes exceeds the 3 bytes after the header"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.what);
    check_failure(Pipeline::build(c.make()), c.code, c.needle);
  }
}

TEST_CASE("tokenizer errors: GGUF vocabularies, their keys and llama.cpp's defaults") {
  const std::vector<std::string> tokens = {"<unk>", "<s>", "</s>", "\xE2\x96\x81" "a", "a"};
  const auto writer = [&](const std::string& model) {
    gguf::Writer result = gguf::Writer::create().value_or_throw();
    result.add("general.name", MetadataValue::string("test")).or_throw();
    result.add("tokenizer.ggml.model", MetadataValue::string(model)).or_throw();
    result.add("tokenizer.ggml.tokens", MetadataValue::strings(tokens)).or_throw();
    return result;
  };
  const auto tokenizer_of = [](const gguf::Writer& w) { return Pipeline::from_gguf(attendre::test::parse(w.bytes().value_or_throw())).value_or_throw(); };

  // A bare "llama" vocabulary: BOS 1 added, space prefix on, unknown 0.
  const Pipeline defaults = tokenizer_of(writer("llama"));
  CHECK(defaults.bos() == 1);
  CHECK(defaults.eos() == 2);
  CHECK(defaults.unknown() == 0);
  CHECK(defaults.encode("a").value_or_throw() == std::vector<int32_t>{1, 3});

  // 0xFFFFFFFF means "none"; so does a negative signed id.
  gguf::Writer none = writer("llama");
  none.add("tokenizer.ggml.bos_token_id", MetadataValue::u32(0xFFFFFFFFu)).or_throw();
  none.add("tokenizer.ggml.eos_token_id", MetadataValue::i32(-1)).or_throw();
  none.add("tokenizer.ggml.add_bos_token", MetadataValue::boolean(false)).or_throw();
  CHECK_FALSE(tokenizer_of(none).bos());
  CHECK_FALSE(tokenizer_of(none).eos());

  gguf::Writer far = writer("llama");
  far.add("tokenizer.ggml.bos_token_id", MetadataValue::u32(99999)).or_throw();
  check_error([&] { tokenizer_of(far); }, ErrorCode::malformed_input,
              "x.gguf: tokenizer.ggml.bos_token_id = 99999 is outside the 5 tokens");

  check_error([&] { tokenizer_of(writer("bert")); }, ErrorCode::unsupported,
              "x.gguf: tokenizer.ggml.model 'bert' is not supported (llama, gpt2, t5)");
  check_error([&] { tokenizer_of(writer("gpt2")); }, ErrorCode::malformed_input, "tokenizer.ggml.merges");

  gguf::Writer scores = writer("llama");
  scores.add("tokenizer.ggml.scores", MetadataValue::strings(tokens)).or_throw();
  check_error([&] { tokenizer_of(scores); }, ErrorCode::malformed_input, "tokenizer.ggml.scores");

  gguf::Writer short_types = writer("llama");
  short_types.add("tokenizer.ggml.token_type", MetadataValue::i32s(std::vector<int32_t>{2, 3, 3})).or_throw();
  check_error([&] { tokenizer_of(short_types); }, ErrorCode::malformed_input,
              "x.gguf: tokenizer.ggml.token_type has 3 entries for 5 tokens");

  gguf::Writer charsmap = writer("t5");
  charsmap.add("tokenizer.ggml.precompiled_charsmap", MetadataValue::strings(tokens)).or_throw();
  check_error([&] { tokenizer_of(charsmap); }, ErrorCode::malformed_input,
              "tokenizer.ggml.precompiled_charsmap is not an array of bytes");

  gguf::Writer pre = writer("gpt2");
  pre.add("tokenizer.ggml.pre", MetadataValue::string("mystery")).or_throw();
  pre.add("tokenizer.ggml.merges", MetadataValue::strings(std::vector<std::string>{})).or_throw();
  check_error([&] { tokenizer_of(pre); }, ErrorCode::unsupported, "x.gguf: tokenizer.ggml.pre 'mystery' is not supported");
}
