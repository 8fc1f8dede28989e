// Which special tokens' texts are split out of raw text, as llama.cpp
// decides it (llama_vocab's tokenizer_st_partition and the token attributes
// its loader sets): user-defined tokens always, control and unknown tokens
// only when special tokens are parsed, the tokens that end generation
// (</s>, <|endoftext|>, ...) being control whatever their GGUF type. Checked
// on the Phi-3 text with the ids llama.cpp gives, on every shared
// vocabulary against the rule restated, and on hand-built GGUF files for
// llama.cpp's overrides by text.
#include "test_tokenizer_support.hpp"

#include "text/tokenizer_vocabulary.hpp"

#include <algorithm>
#include <filesystem>

namespace gguf = attendre::gguf;
using gguf::MetadataValue;
using namespace attendre::tokenizer;
using attendre::test::shared_models;
using attendre::test::tokenizer::id_of;
using attendre::test::tokenizer::ids_of;
using attendre::test::tokenizer::kRaw;

namespace {

const EncodeOptions kParsed{.add_bos = false, .add_eos = false, .parse_special = true};

Pipeline load_vocabulary(const std::filesystem::path& path) { return Pipeline::from_gguf(gguf::File::open(path).value_or_throw()).value_or_throw(); }

bool contains(const std::vector<int32_t>& ids, int32_t id) { return std::find(ids.begin(), ids.end(), id) != ids.end(); }

bool is_ascii_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'; }

// A text built of words and special tokens' texts, and the ids llama.cpp's
// rule gives it, derived piece by piece: a special token split out gives its
// id (eating the whitespace next to it when it strips), and each run of text
// between two split tokens is a fragment of its own, which the tokenizer
// encodes as it encodes that run alone (the run holds no text that is split
// out, so encoding it alone runs the model on it whole, with the space
// prefix every fragment gets). A special token not split out is part of its
// run: its text tokenizes exactly as if it were no special token.
struct Expectation {
  const Pipeline& tokenizer;
  const std::vector<TokenType>& types;  // llama.cpp's, derived by the test
  bool parse_special;
  std::string text;
  std::vector<int32_t> ids;
  std::string run;  // text not yet encoded
  bool strip_run_start = false;

  void add_text(std::string_view words) {
    text += words;
    run += words;
  }
  void add_special(int32_t id) {
    const std::string& token = tokenizer.vocabulary().tokens[static_cast<size_t>(id)];
    text += token;
    const bool split = parse_special || types[static_cast<size_t>(id)] == TokenType::user_defined;
    if (!split) {
      run += token;
      return;
    }
    if (contains(tokenizer.vocabulary().lstrip, id))
      while (!run.empty() && is_ascii_space(run.back())) run.pop_back();
    end_run();
    ids.push_back(id);
    strip_run_start = contains(tokenizer.vocabulary().rstrip, id);
  }
  void end_run() {
    size_t start = 0;
    if (strip_run_start)
      while (start < run.size() && is_ascii_space(run[start])) ++start;
    if (start < run.size())
      for (const int32_t id : tokenizer.encode(std::string_view(run).substr(start), kRaw).value_or_throw()) ids.push_back(id);
    run.clear();
    strip_run_start = false;
  }
};

// The types llama.cpp gives a vocabulary's tokens: its GGUF's types, bar
// the tokens that end generation, which it makes control (restated here for
// the texts of those the shared vocabularies hold: Phi-3's </s> is
// user-defined in its GGUF, Qwen2's normal, the others are control already).
std::vector<TokenType> llama_cpp_types(const gguf::File& file) {
  const std::vector<std::string> tokens = file.get_strings("tokenizer.ggml.tokens").value_or_throw();
  std::vector<TokenType> types(tokens.size(), TokenType::normal);
  if (file.find("tokenizer.ggml.token_type")) {
    const std::vector<int32_t> stored = file.get_i32s("tokenizer.ggml.token_type").value_or_throw();
    std::transform(stored.begin(), stored.end(), types.begin(), [](int32_t type) { return static_cast<TokenType>(type); });
  }
  for (size_t id = 0; id < tokens.size(); ++id)
    for (const std::string_view ends : {"</s>", "<|endoftext|>", "<|end|>", "<|im_end|>", "<|eot_id|>", "<|end_of_text|>"})
      if (tokens[id] == ends) types[id] = TokenType::control;
  return types;
}

// The special tokens whose text no other special token's text overlaps when
// glued to the words "word" and spaces (so each is claimed where it is put).
std::vector<int32_t> separable_specials(const Pipeline& tokenizer, const std::vector<TokenType>& types) {
  std::vector<int32_t> specials;
  for (int32_t id = 0; id < tokenizer.size(); ++id)
    if (is_special(types[static_cast<size_t>(id)]) && !tokenizer.vocabulary().tokens[static_cast<size_t>(id)].empty())
      specials.push_back(id);
  std::vector<int32_t> separable;
  for (const int32_t id : specials) {
    const std::string& own = tokenizer.vocabulary().tokens[static_cast<size_t>(id)];
    const std::string glued = "word" + own + "word " + own + " ";
    const bool overlapped = std::any_of(specials.begin(), specials.end(), [&](int32_t other) {
      const std::string& text = tokenizer.vocabulary().tokens[static_cast<size_t>(other)];
      return other != id && glued.find(text) != std::string::npos;
    });
    if (!overlapped) separable.push_back(id);
  }
  return separable;
}

}  // namespace

TEST_CASE("tokenizer special texts: Phi-3's </s> ends generation, so unparsed it is plain text as llama.cpp gives it") {
  const auto models = shared_models();
  if (!models) return;
  const Pipeline phi3 = load_vocabulary(*models / "vocab" / "ggml-vocab-phi-3.gguf");
  const std::string text = "<s> </s> <unk> [CLS] <|endoftext|> <|im_start|>";
  // </s> (id 2) is user-defined in the GGUF; llama.cpp makes it control, as
  // it does every token that ends generation.
  CHECK(phi3.type(2).value_or_throw() == TokenType::control);
  // Unparsed, <s> <unk> <|endoftext|> are control and </s> now too, and
  // [CLS] <|im_start|> are no tokens: the text is one SentencePiece fragment,
  // "▁<s>▁</s>▁<unk>▁[CLS]▁<|endoftext|>▁<|im_start|>", whose pieces are
  // these. llama.cpp gives 1533 29879 29958 (▁</ s >) for </s> and the same
  // shape, 529 29879 29958 (▁< s >), for <s>.
  const std::vector<int32_t> unparsed{529,  29879, 29958, 1533, 29879, 29958, 529, 2960,  29958,
                                      518,  6154,  29903, 29962, 529,  29989, 355, 974,   726,
                                      29989, 29958, 529,  29989, 326,  29918, 2962, 29989, 29958};
  CHECK(ids_of(phi3, {"\xE2\x96\x81<", "s", ">", "\xE2\x96\x81</", "s", ">", "\xE2\x96\x81<", "unk", ">", "\xE2\x96\x81[",
                      "CL", "S", "]", "\xE2\x96\x81<", "|", "end", "of", "text", "|", ">", "\xE2\x96\x81<", "|", "im",
                      "_", "start", "|", ">"}) == unparsed);
  CHECK(phi3.encode(text, kRaw).value_or_throw() == unparsed);
  CHECK(phi3.decode(unparsed).value_or_throw() == text);
  // Parsed: <s> 1, then the fragment " " with its space prefix (▁▁, 259);
  // </s> 2 eats the space after it (Phi-3's rstrip); <unk> 0 and
  // <|endoftext|> 32000 do not, so " [CLS] " and " <|im_start|>" are
  // fragments, each with its space prefix (▁ is 29871).
  std::vector<int32_t> parsed{1, 259, 2, 0};
  for (const int32_t id : phi3.encode(" [CLS] ", kRaw).value_or_throw()) parsed.push_back(id);
  parsed.push_back(32000);
  for (const int32_t id : phi3.encode(" <|im_start|>", kRaw).value_or_throw()) parsed.push_back(id);
  CHECK(parsed == std::vector<int32_t>{1, 259, 2, 0, 29871, 518, 6154, 29903, 29962, 29871, 32000, 29871, 529, 29989, 326,
                                       29918, 2962, 29989, 29958});
  CHECK(phi3.encode(text, kParsed).value_or_throw() == parsed);
}

TEST_CASE("tokenizer special texts: every shared vocabulary, its special tokens' texts glued to words, unparsed and parsed") {
  const auto models = shared_models();
  if (!models) return;
  size_t vocabularies = 0;
  for (const auto& entry : std::filesystem::directory_iterator(*models / "vocab")) {
    if (entry.path().extension() != ".gguf") continue;
    CAPTURE(entry.path().filename().string());
    const gguf::File file = gguf::File::open(entry.path()).value_or_throw();
    const Pipeline tokenizer = Pipeline::from_gguf(file).value_or_throw();
    const std::vector<TokenType> types = llama_cpp_types(file);
    REQUIRE(types.size() == static_cast<size_t>(tokenizer.size()));
    std::vector<int32_t> typed_otherwise;  // tokens the loader types otherwise than llama.cpp
    for (int32_t id = 0; id < tokenizer.size(); ++id)
      if (tokenizer.type(id).value_or_throw() != types[static_cast<size_t>(id)]) typed_otherwise.push_back(id);
    CHECK(typed_otherwise == std::vector<int32_t>{});
    const std::vector<int32_t> specials = separable_specials(tokenizer, types);
    REQUIRE(!specials.empty());
    for (const bool parse_special : {false, true}) {
      CAPTURE(parse_special);
      Expectation expected{tokenizer, types, parse_special, {}, {}, {}, false};
      for (const int32_t id : specials) {
        expected.add_text("word");
        expected.add_special(id);
        expected.add_text("word ");
        expected.add_special(id);
        expected.add_text(" ");
      }
      expected.end_run();
      CHECK(tokenizer.encode(expected.text, parse_special ? kParsed : kRaw).value_or_throw() == expected.ids);
    }
    MESSAGE(entry.path().filename().string() << ": " << specials.size() << " special tokens, each apart from the others");
    ++vocabularies;
  }
  CHECK(vocabularies == 13);
}

TEST_CASE("tokenizer special texts: llama.cpp's types by token text override the GGUF's") {
  constexpr int32_t normal = 1, control = 3, user_defined = 4;
  // A "llama" vocabulary named `name`, with a type array when `types` has any.
  const auto tokenizer_of = [](const std::string& name, const std::vector<std::string>& tokens,
                               const std::vector<int32_t>& types) {
    gguf::Writer writer = gguf::Writer::create().value_or_throw();
    writer.add("general.name", MetadataValue::string(name)).or_throw();
    writer.add("tokenizer.ggml.model", MetadataValue::string("llama")).or_throw();
    writer.add("tokenizer.ggml.tokens", MetadataValue::strings(tokens)).or_throw();
    if (!types.empty()) writer.add("tokenizer.ggml.token_type", MetadataValue::i32s(types)).or_throw();
    return Pipeline::from_gguf(attendre::test::parse(writer.bytes().value_or_throw())).value_or_throw();
  };
  // Ending generation makes a token control, from normal or user-defined;
  // gpt-oss's channel markers become user-defined.
  const Pipeline plain = tokenizer_of("test", {"<unk>", "<s>", "</s>", "<|im_end|>", "<|end|>", "<|channel|>", "a"},
                                       {control, control, user_defined, normal, normal, control, normal});
  CHECK(plain.type(2).value_or_throw() == TokenType::control);
  CHECK(plain.type(3).value_or_throw() == TokenType::control);
  CHECK(plain.type(4).value_or_throw() == TokenType::control);
  CHECK(plain.type(5).value_or_throw() == TokenType::user_defined);
  CHECK(plain.type(6).value_or_throw() == TokenType::normal);
  std::vector<int32_t> parsed_plain = plain.encode("a", kRaw).value_or_throw();
  parsed_plain.push_back(2);
  CHECK(plain.encode("a</s>", kParsed).value_or_throw() == parsed_plain);
  // Where <|return|> and <|call|> exist (the harmony format), <|end|> is
  // user-defined; where <|tool_response> exists (Gemma 4), </s> is normal.
  const Pipeline harmony =
      tokenizer_of("test", {"<unk>", "<s>", "</s>", "<|end|>", "<|return|>", "<|call|>", "<|tool_response>"},
                   {control, control, control, control, normal, normal, normal});
  const std::vector<TokenType> harmony_types{TokenType::control, TokenType::control, TokenType::normal,
                                             TokenType::user_defined, TokenType::control, TokenType::control,
                                             TokenType::control};
  for (int32_t id = 0; id < harmony.size(); ++id) CHECK(harmony.type(id).value_or_throw() == harmony_types[static_cast<size_t>(id)]);
  // Without a type array every token is normal but those the text names.
  const Pipeline bare = tokenizer_of("test", {"<unk>", "<s>", "</s>", "a"}, {});
  CHECK(bare.type(1).value_or_throw() == TokenType::normal);
  CHECK(bare.type(2).value_or_throw() == TokenType::control);
  // A type array of the wrong length is refused in one line, also where
  // types are set by text and by model name (Phi-3's strip attributes).
  attendre::test::check_error([&] { tokenizer_of("Phi3", {"<unk>", "<s>", "a", "</s>"}, {control, control}); },
                              attendre::ErrorCode::malformed_input,
                              "x.gguf: tokenizer.ggml.token_type has 2 entries for 4 tokens");

  // Qwen2's </s> is a normal token in its GGUF: llama.cpp parses it as a
  // special token, its id, where unparsed its text is pieces (</ s >).
  const auto models = shared_models();
  if (!models) return;
  const Pipeline qwen2 = load_vocabulary(*models / "vocab" / "ggml-vocab-qwen2.gguf");
  const int32_t end_of_sequence = id_of(qwen2, "</s>");
  CHECK(qwen2.type(end_of_sequence).value_or_throw() == TokenType::control);
  std::vector<int32_t> parsed = qwen2.encode("Hi", kRaw).value_or_throw();
  parsed.push_back(end_of_sequence);
  CHECK(qwen2.encode("Hi</s>", kParsed).value_or_throw() == parsed);
  CHECK(qwen2.encode("Hi</s>", kRaw).value_or_throw().size() == parsed.size() + 2);
}
