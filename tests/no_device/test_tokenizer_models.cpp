// The three tokenization algorithms and the special-token splitter on small
// hand-built vocabularies, where the right answer can be worked out by hand
// (merge order, tie breaks, fallbacks) or by brute force (the unigram
// segmentation with the best score).
#include "test_tokenizer_support.hpp"

#include <cmath>
#include <functional>
#include <map>
#include <random>

using attendre::ErrorCode;
using attendre::test::check_error;
using attendre::test::check_failure;
using namespace attendre::tokenizer;
using namespace attendre::test::tokenizer;

TEST_CASE("tokenizer spm: the best-scoring pair merges first, ties go to the leftmost") {
  // "▁abc": "bc" (-1.5) beats "ab" (-2) although "ab" is further left; then "abc" forms.
  const Pipeline scored = Pipeline::build(spm_vocabulary({{" ", -1}, {"a", -1}, {"b", -1}, {"c", -1}, {"ab", -2}, {"bc", -1.5f}, {"abc", -1.8f}})).value_or_throw();
  CHECK(scored.encode("abc", kRaw).value_or_throw() == ids_of(scored, {"\xE2\x96\x81", "abc"}));
  // Equal scores: the leftmost "aa" merges, leaving the third 'a' alone.
  const Pipeline tied = Pipeline::build(spm_vocabulary({{" ", -1}, {"a", -1}, {"aa", -1}})).value_or_throw();
  CHECK(tied.encode("aaa", kRaw).value_or_throw() == ids_of(tied, {"\xE2\x96\x81", "aa", "a"}));
  // The space prefix and BOS come from the vocabulary's flags.
  CHECK(tied.encode("a").value_or_throw() == std::vector<int32_t>{1, id_of(tied, "\xE2\x96\x81"), id_of(tied, "a")});
}

TEST_CASE("tokenizer spm: byte fallback, or the unknown token without byte tokens") {
  const Pipeline bytes = Pipeline::build(spm_vocabulary({{" ", -1}, {"a", -1}})).value_or_throw();
  CHECK(bytes.encode("\xC3\xA9", kRaw).value_or_throw() == ids_of(bytes, {"\xE2\x96\x81", "<0xC3>", "<0xA9>"}));
  CHECK(bytes.decode(bytes.encode("a\xC3\xA9 a").value_or_throw()).value_or_throw() == "a\xC3\xA9 a");
  const Pipeline no_bytes = Pipeline::build(spm_vocabulary({{" ", -1}, {"a", -1}}, false)).value_or_throw();
  CHECK(no_bytes.encode("\xC3\xA9\xC3\xA9", kRaw).value_or_throw() == std::vector<int32_t>{id_of(no_bytes, "\xE2\x96\x81"), 0, 0});
}

TEST_CASE("tokenizer spm: merges never form control, byte or unknown tokens and unused ones are split back") {
  Vocabulary vocabulary = spm_vocabulary({{" ", -1}, {"<", -1}, {"s", -1}, {">", -1}, {"<s", -1}, {"a", -1}, {"b", -1}});
  add(vocabulary, "ab", TokenType::unused, 5);
  const Pipeline tokenizer = Pipeline::build(std::move(vocabulary)).value_or_throw();
  // "<s" + ">" would be the control token <s>: SentencePiece never produces it from text.
  CHECK(tokenizer.encode("<s>", kRaw).value_or_throw() == ids_of(tokenizer, {"\xE2\x96\x81", "<s", ">"}));
  CHECK(tokenizer.encode("<s>", {.add_bos = false, .parse_special = true}).value_or_throw() == std::vector<int32_t>{1});
  CHECK(tokenizer.encode("ab", kRaw).value_or_throw() == ids_of(tokenizer, {"\xE2\x96\x81", "a", "b"}));
}

TEST_CASE("tokenizer spm: the space prefix is added after each special token and stripped again by decode") {
  const Pipeline tokenizer = Pipeline::build(spm_vocabulary({{" ", -1}, {"a", -1}, {"b", -1}, {" a", -0.5f}, {" b", -0.5f}})).value_or_throw();
  const std::vector<int32_t> ids = tokenizer.encode("a</s>b", {.parse_special = true}).value_or_throw();
  CHECK(ids == std::vector<int32_t>{1, id_of(tokenizer, "\xE2\x96\x81" "a"), 2, id_of(tokenizer, "\xE2\x96\x81" "b")});
  CHECK(tokenizer.decode(ids).value_or_throw() == "ab");
  CHECK(tokenizer.decode(ids, {.render_special = true}).value_or_throw() == "<s>a</s>b");
  CHECK(tokenizer.decode(ids, {.render_special = true, .strip_space_prefix = false}).value_or_throw() == "<s> a</s> b");
  for (const std::string text : {"", " ", "  a  ", "a b", " a\xC3\xA9"})
    CHECK(tokenizer.decode(tokenizer.encode(text).value_or_throw()).value_or_throw() == text);
  Vocabulary no_prefix = spm_vocabulary({{" ", -1}, {"a", -1}});
  no_prefix.add_space_prefix = false;
  const Pipeline plain = Pipeline::build(std::move(no_prefix)).value_or_throw();
  CHECK(plain.encode("a", kRaw).value_or_throw() == ids_of(plain, {"a"}));
  CHECK(plain.decode(plain.encode(" a").value_or_throw()).value_or_throw() == " a");
}

TEST_CASE("tokenizer bpe: the lowest merge rank wins, within each pre-tokenized word") {
  const Pipeline ranked = Pipeline::build(bpe_vocabulary({{"b", "c"}, {"a", "b"}})).value_or_throw();
  CHECK(ranked.encode("abc", kRaw).value_or_throw() == ids_of(ranked, {"a", "bc"}));
  const Pipeline reversed = Pipeline::build(bpe_vocabulary({{"a", "b"}, {"b", "c"}})).value_or_throw();
  CHECK(reversed.encode("abc", kRaw).value_or_throw() == ids_of(reversed, {"ab", "c"}));
  // "o" + "Ġ" never merges: the GPT-2 regex puts the space in the next word.
  const Pipeline words = Pipeline::build(bpe_vocabulary({{"o", " "}, {" ", "h"}, {"h", "o"}})).value_or_throw();
  CHECK(words.encode("ho ho", kRaw).value_or_throw() == ids_of(words, {"ho", "\xC4\xA0h", "o"}));
  for (const std::string text : {"", "ho ho", " \t\n", "h\xC3\xA9llo \xF0\x9F\xA6\x99!"})
    CHECK(words.decode(words.encode(text).value_or_throw()).value_or_throw() == text);
}

TEST_CASE("tokenizer bpe: decoding can clean up spaces as Hugging Face and llama.cpp do") {
  const Pipeline tokenizer = Pipeline::build(bpe_vocabulary({})).value_or_throw();
  const std::vector<int32_t> ids = tokenizer.encode("a , b ' c 's 't !", kRaw).value_or_throw();
  CHECK(tokenizer.decode(ids).value_or_throw() == "a , b ' c 's 't !");
  // " ," -> ","; " ' " -> "'"; " 's" -> "'s" but " 't" stays; " !" -> "!".
  CHECK(tokenizer.decode(ids, {.clean_up_spaces = true}).value_or_throw() == "a, b'c's 't!");
}

TEST_CASE("tokenizer bpe: Llama 3 takes a word that is a whole token as it is (ignore_merges)") {
  for (const std::string pre : {"gpt-2", "llama-bpe"}) {
    Vocabulary vocabulary = bpe_vocabulary({{"h", "e"}}, pre);
    vocabulary.tokens.push_back("hello");  // no merges lead to it
    const Pipeline tokenizer = Pipeline::build(std::move(vocabulary)).value_or_throw();
    CAPTURE(pre);
    const std::vector<int32_t> expected =
        pre == "llama-bpe" ? ids_of(tokenizer, {"hello"}) : ids_of(tokenizer, {"he", "l", "l", "o"});
    CHECK(tokenizer.encode("hello", kRaw).value_or_throw() == expected);
  }
}

TEST_CASE("tokenizer bpe: every pre-tokenizer regex keeps all the text") {
  // Pieces must concatenate back to the input whatever it holds: gaps
  // between matches are pieces too, and nothing is matched twice.
  const char* alphabet[] = {"a", "Z", "7", " ", "  ", "\t", "\n", "\r\n", "'s", "'LL", "!", "...", "\xC3\xA9", "\xE6\x97\xA5",
                            "\xF0\x9F\xA6\x99", "e\xCC\x81", "\xD9\xA3", "\xE2\x80\x8D", "\xC2\xA0", "\xEF\xBC\xA1"};
  std::mt19937 rng(7);
  for (const std::string pre : {"", "default", "llama-bpe", "qwen2", "gpt-2", "deepseek-llm", "deepseek-coder", "falcon",
                                "starcoder", "refact", "mpt", "tekken", "gpt-4o", "bailingmoe", "jais-2", "youtu"}) {
    Vocabulary vocabulary = bpe_vocabulary({}, pre);
    const Pipeline tokenizer = Pipeline::build(std::move(vocabulary)).value_or_throw();
    for (int trial = 0; trial < 200; ++trial) {
      std::string text;
      for (int n = 0; n < 12; ++n) text += alphabet[rng() % std::size(alphabet)];
      CAPTURE(pre);
      CAPTURE(text);
      const std::vector<int32_t> ids = tokenizer.encode(text, kRaw).value_or_throw();
      CHECK(ids.size() == text.size());  // no merges: one token per byte
      CHECK(tokenizer.decode(ids).value_or_throw() == text);
    }
  }
}

TEST_CASE("tokenizer bpe: an unknown pre-tokenizer is named, with the supported ones") {
  check_failure(Pipeline::build(bpe_vocabulary({}, "no-such-pre")), ErrorCode::unsupported,
              "tokenizer.ggml.pre 'no-such-pre' is not supported; supported: default, llama3");
}

TEST_CASE("tokenizer unigram: Viterbi finds the best-scoring segmentation (brute force on small cases)") {
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> score(-8.0f, -0.1f);
  for (int vocabulary_trial = 0; vocabulary_trial < 20; ++vocabulary_trial) {
    // Every string over {a, b, c} of length 1..3 is a piece with probability 1/2; single letters always.
    std::vector<std::pair<std::string, float>> pieces;
    std::function<void(std::string)> grow = [&](std::string prefix) {
      if (!prefix.empty() && (prefix.size() == 1 || rng() % 2 == 0)) pieces.emplace_back(prefix, score(rng));
      if (prefix.size() < 3)
        for (const char c : {'a', 'b', 'c'}) grow(prefix + c);
    };
    grow("");
    const Pipeline tokenizer = Pipeline::build(unigram_vocabulary(pieces)).value_or_throw();
    std::map<std::string, float> scores(pieces.begin(), pieces.end());
    for (int text_trial = 0; text_trial < 20; ++text_trial) {
      std::string text;
      for (size_t n = 1 + rng() % 9; n > 0; --n) text += "abc"[rng() % 3];
      // Best score over all segmentations, by recursion over the first piece.
      std::function<double(size_t)> best = [&](size_t start) -> double {
        if (start == text.size()) return 0.0;
        double result = -INFINITY;
        for (size_t length = 1; length <= 3 && start + length <= text.size(); ++length)
          if (const auto found = scores.find(text.substr(start, length)); found != scores.end())
            result = std::max(result, double{found->second} + best(start + length));
        return result;
      };
      const std::vector<int32_t> ids = tokenizer.encode(text, kRaw).value_or_throw();
      double total = 0;
      std::string joined;
      for (const int32_t id : ids) {
        total += tokenizer.vocabulary().scores[static_cast<size_t>(id)];
        joined += tokenizer.vocabulary().tokens[static_cast<size_t>(id)];
      }
      CAPTURE(text);
      CHECK(joined == text);
      CHECK(total == doctest::Approx(best(0)).epsilon(1e-12));
    }
  }
}

TEST_CASE("tokenizer unigram: unknown characters, merged into one unknown token per run") {
  const Pipeline tokenizer = Pipeline::build(unigram_vocabulary({{"a", -1}, {"b", -2}})).value_or_throw();
  CHECK(tokenizer.encode("xax", kRaw).value_or_throw() == std::vector<int32_t>{2, id_of(tokenizer, "a"), 2});
  CHECK(tokenizer.encode("x\xE6\x97\xA5" "ab", kRaw).value_or_throw() == std::vector<int32_t>{2, id_of(tokenizer, "a"), id_of(tokenizer, "b")});
  CHECK(tokenizer.decode(tokenizer.encode("xa", kRaw).value_or_throw()).value_or_throw() == "a");  // unknown tokens render as nothing
  CHECK(tokenizer.decode(tokenizer.encode("xa", kRaw).value_or_throw(), {.render_special = true}).value_or_throw() == "<unk>a");
  CHECK(tokenizer.encode("", kRaw).value_or_throw().empty());
}

TEST_CASE("tokenizer unigram: whitespace normalisation (space prefix, extra spaces removed) and EOS by default") {
  Vocabulary vocabulary = unigram_vocabulary({{" ", -5}, {" a", -1}, {" b", -1}, {"a", -2}, {"b", -2}});
  vocabulary.add_space_prefix = true;
  vocabulary.remove_extra_whitespaces = true;
  vocabulary.add_eos = true;
  const Pipeline tokenizer = Pipeline::build(std::move(vocabulary)).value_or_throw();
  const std::vector<int32_t> expected = {id_of(tokenizer, "\xE2\x96\x81" "a"), id_of(tokenizer, "\xE2\x96\x81" "b"), 1};
  for (const std::string text : {"a b", "  a   b  ", "a b "}) CHECK(tokenizer.encode(text).value_or_throw() == expected);
  CHECK(tokenizer.decode(expected).value_or_throw() == "a b");
  CHECK(tokenizer.encode("   ", kRaw).value_or_throw().empty());
}

TEST_CASE("tokenizer special tokens: longest first, user-defined always, control only when parsed, lstrip and rstrip") {
  Vocabulary vocabulary = bpe_vocabulary({});
  vocabulary.tokens.insert(vocabulary.tokens.end(), {"<a>", "<a><b>", "ab", "bcd", "<l>", "<r>"});
  vocabulary.types.assign(vocabulary.tokens.size(), TokenType::normal);
  const auto count = static_cast<int32_t>(vocabulary.tokens.size());
  const int32_t a = count - 6, ab_control = count - 5, ab = count - 4, bcd = count - 3, l = count - 2, r = count - 1;
  vocabulary.types[a] = vocabulary.types[ab_control] = TokenType::control;
  vocabulary.types[ab] = vocabulary.types[bcd] = vocabulary.types[l] = vocabulary.types[r] = TokenType::user_defined;
  vocabulary.lstrip = {l};
  vocabulary.rstrip = {r};
  const Pipeline tokenizer = Pipeline::build(std::move(vocabulary)).value_or_throw();
  const auto byte = [&](char c) { return id_of(tokenizer, attendre::tokenizer::unicode::byte_level_alphabet()[static_cast<uint8_t>(c)]); };
  const EncodeOptions parse{.add_bos = false, .add_eos = false, .parse_special = true};
  CHECK(tokenizer.encode("x<a><b>y", parse).value_or_throw() == std::vector<int32_t>{byte('x'), ab_control, byte('y')});
  CHECK(tokenizer.encode("<a>", kRaw).value_or_throw() == std::vector<int32_t>{byte('<'), byte('a'), byte('>')});
  // llama.cpp's order: "bcd" (longer) claims first, so "ab" cannot.
  CHECK(tokenizer.encode("abcd", kRaw).value_or_throw() == std::vector<int32_t>{byte('a'), bcd});
  CHECK(tokenizer.encode("x \t<l>  y", kRaw).value_or_throw() == std::vector<int32_t>{byte('x'), l, byte(' '), byte(' '), byte('y')});
  CHECK(tokenizer.encode("x<r> \n y", kRaw).value_or_throw() == std::vector<int32_t>{byte('x'), r, byte('y')});
  CHECK(tokenizer.decode(tokenizer.encode("x<a><b>ab", parse).value_or_throw()).value_or_throw() == "xab");
  CHECK(tokenizer.decode(tokenizer.encode("x<a><b>ab", parse).value_or_throw(), {.render_special = true}).value_or_throw() == "x<a><b>ab");
}
