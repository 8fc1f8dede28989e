// The tokenizers against real vocabularies (../shared/models, see its
// README.md): every line of llama.cpp's test vectors (X.gguf.inp/.out,
// encoded without BOS/EOS and without parsing special tokens), round trips
// of awkward text on every vocabulary, the llama2.c models' known prompt,
// and the unigram vocabulary (no vectors) against an independent search
// for the best segmentation and against NFKC facts.
#include "test_tokenizer_support.hpp"

#include <chrono>
#include <cmath>
#include <fstream>
#include <iterator>
#include <sstream>

namespace gguf = attendre::gguf;
using namespace attendre::tokenizer;
using attendre::test::shared_models;
using attendre::test::slurp;
using attendre::test::tokenizer::kRaw;

namespace {

// Texts of an .inp file: each followed by a line "__ggml_vocab_test__".
std::vector<std::string> read_texts(const std::filesystem::path& path) {
  const std::string all = slurp(path);
  const std::string separator = "\n__ggml_vocab_test__\n";
  std::vector<std::string> texts;
  size_t start = 0;
  for (size_t found = all.find(separator); found != std::string::npos; found = all.find(separator, start)) {
    texts.push_back(all.substr(start, found - start));
    start = found + separator.size();
  }
  return texts;
}

// Lines of an .out file: the expected ids of each text.
std::vector<std::vector<int32_t>> read_ids(const std::filesystem::path& path) {
  std::istringstream lines(slurp(path));
  std::vector<std::vector<int32_t>> all;
  for (std::string line; std::getline(lines, line);) {
    std::istringstream numbers(line);
    all.emplace_back(std::istream_iterator<int32_t>(numbers), std::istream_iterator<int32_t>());
  }
  return all;
}

std::optional<Pipeline> load(const std::string& file_name) {
  const auto models = shared_models();
  if (!models) return std::nullopt;
  return Pipeline::from_gguf(gguf::File::open(*models / "vocab" / file_name).value_or_throw()).value_or_throw();
}

// Text that trips tokenizers: nothing, only spaces, controls, emoji with
// joiners and variation selectors, CJK, decomposed accents (combining
// marks), right-to-left scripts, Indic clusters, no-break and ideographic
// spaces, a lone surrogate-range neighbour (U+FFFD) and the highest code point.
const std::vector<std::string> kAwkwardTexts = {
    "", " ", "    ", "\t", "\n\n\n", " \r\n ", "Hello, world!",
    "\xF0\x9F\xA6\x99 \xF0\x9F\x91\xA8\xE2\x80\x8D\xF0\x9F\x91\xA9\xE2\x80\x8D\xF0\x9F\x91\xA7 \xE2\x9D\xA4\xEF\xB8\x8F",
    "\xE6\x97\xA5\xE6\x9C\xAC\xE8\xAA\x9E\xE3\x81\xAE\xE3\x83\x86\xE3\x82\xAD\xE3\x82\xB9\xE3\x83\x88\xE3\x80\x82\xE4\xB8\xAD\xE6\x96\x87",
    "e\xCC\x81 n\xCC\x83 a\xCC\x88\xCC\x81", "\xD9\x85\xD8\xB1\xD8\xAD\xD8\xA8\xD8\xA7 123", "\xE0\xA4\xA8\xE0\xA4\xAE\xE0\xA4\xB8\xE0\xA5\x8D\xE0\xA4\xA4\xE0\xA5\x87",
    "a\xC2\xA0" "b\xE3\x80\x80" "c", "\xEF\xBF\xBD\xF4\x8F\xBF\xBF", "x = [1, 2];\n\tif (x) { return 'y'; }",
};

void check_round_trips(const Pipeline& tokenizer) {
  for (const std::string& text : kAwkwardTexts) {
    CAPTURE(text);
    CHECK(tokenizer.decode(tokenizer.encode(text, kRaw).value_or_throw()).value_or_throw() == text);
    CHECK(tokenizer.decode(tokenizer.encode(text).value_or_throw()).value_or_throw() == text);  // with the vocabulary's BOS/EOS
  }
}

void check_vectors(const std::string& name) {
  const std::string file_name = "ggml-vocab-" + name + ".gguf";
  const std::optional<Pipeline> tokenizer = load(file_name);
  if (!tokenizer) return;
  const std::filesystem::path base = *shared_models() / "vocab" / file_name;
  const std::vector<std::string> texts = read_texts(base.string() + ".inp");
  const std::vector<std::vector<int32_t>> expected = read_ids(base.string() + ".out");
  REQUIRE(!texts.empty());
  REQUIRE(texts.size() == expected.size());
  size_t passed = 0;
  for (size_t i = 0; i < texts.size(); ++i) {
    CAPTURE(i);
    CAPTURE(texts[i]);
    const std::vector<int32_t> ids = tokenizer->encode(texts[i], kRaw).value_or_throw();
    CHECK(ids == expected[i]);
    passed += ids == expected[i];
    CHECK(tokenizer->decode(ids).value_or_throw() == texts[i]);
  }
  MESSAGE(name << ": " << passed << " of " << texts.size() << " vectors match");
  check_round_trips(*tokenizer);
}

}  // namespace

TEST_CASE("tokenizer vectors: llama-spm") { check_vectors("llama-spm"); }
TEST_CASE("tokenizer vectors: phi-3") { check_vectors("phi-3"); }
TEST_CASE("tokenizer vectors: llama-bpe") { check_vectors("llama-bpe"); }
TEST_CASE("tokenizer vectors: qwen2") { check_vectors("qwen2"); }
TEST_CASE("tokenizer vectors: gpt-2") { check_vectors("gpt-2"); }
TEST_CASE("tokenizer vectors: deepseek-llm") { check_vectors("deepseek-llm"); }
TEST_CASE("tokenizer vectors: deepseek-coder") { check_vectors("deepseek-coder"); }
TEST_CASE("tokenizer vectors: falcon") { check_vectors("falcon"); }
TEST_CASE("tokenizer vectors: starcoder") { check_vectors("starcoder"); }
TEST_CASE("tokenizer vectors: mpt") { check_vectors("mpt"); }
TEST_CASE("tokenizer vectors: refact") { check_vectors("refact"); }

TEST_CASE("tokenizer vectors: baichuan (no vectors) loads, adds BOS and round-trips") {
  const std::optional<Pipeline> tokenizer = load("ggml-vocab-baichuan.gguf");
  if (!tokenizer) return;
  CHECK(tokenizer->vocabulary().model == Model::sentencepiece_bpe);
  CHECK(tokenizer->size() == 64000);
  const std::vector<int32_t> ids = tokenizer->encode("Hello world").value_or_throw();
  REQUIRE(ids.size() >= 2);
  CHECK(ids.front() == 1);  // add_bos defaults to true for SentencePiece vocabularies
  check_round_trips(*tokenizer);
}

TEST_CASE("tokenizer: the llama2.c models tokenize their prompt as llama.cpp does") {
  const auto models = shared_models();
  if (!models) return;
  const Pipeline aidreams = Pipeline::from_gguf(gguf::File::open(*models / "aidreams260K.gguf").value_or_throw()).value_or_throw();
  CHECK(aidreams.encode("Once upon a time").value_or_throw() == std::vector<int32_t>{1, 429, 491, 433, 295, 429, 444, 445, 265, 262, 263, 342, 430});
  CHECK(aidreams.decode(aidreams.encode("Once upon a time").value_or_throw()).value_or_throw() == "Once upon a time");
  const Pipeline stories = Pipeline::from_gguf(gguf::File::open(*models / "stories260K.gguf").value_or_throw()).value_or_throw();
  const std::vector<int32_t> ids = stories.encode("Once upon a time").value_or_throw();
  CHECK(ids.size() == 5);  // the README's "5 ids", BOS included
  CHECK(ids.front() == 1);
  check_round_trips(stories);
}

TEST_CASE("tokenizer: special tokens of real vocabularies (parse_special, BOS from metadata, Phi-3's rstrip)") {
  const std::optional<Pipeline> llama3 = load("ggml-vocab-llama-bpe.gguf");
  if (!llama3) return;
  CHECK(llama3->vocabulary().clean_spaces);  // as llama.cpp sets it per pre-tokenizer
  CHECK_FALSE(load("ggml-vocab-qwen2.gguf")->vocabulary().clean_spaces);
  CHECK(llama3->encode("Hello").value_or_throw() == std::vector<int32_t>{128000, 9906});  // llama-bpe adds BOS by default
  const std::vector<int32_t> parsed = llama3->encode("<|begin_of_text|>Hello<|eot_id|>", {.add_bos = false, .parse_special = true}).value_or_throw();
  CHECK(parsed == std::vector<int32_t>{128000, 9906, 128009});
  CHECK(llama3->decode(parsed).value_or_throw() == "Hello");
  CHECK(llama3->decode(parsed, {.render_special = true}).value_or_throw() == "<|begin_of_text|>Hello<|eot_id|>");
  const std::vector<int32_t> unparsed = llama3->encode("<|begin_of_text|>", kRaw).value_or_throw();
  CHECK(unparsed.size() > 1);
  CHECK(llama3->decode(unparsed).value_or_throw() == "<|begin_of_text|>");

  const std::optional<Pipeline> phi3 = load("ggml-vocab-phi-3.gguf");
  REQUIRE(phi3);
  // <|user|> swallows the newline after it; "Hi" starts a fragment, so it gets the space prefix.
  std::vector<int32_t> expected{32010};
  for (const int32_t id : phi3->encode("Hi", kRaw).value_or_throw()) expected.push_back(id);
  expected.push_back(32007);
  CHECK(phi3->encode("<|user|>\nHi<|end|>", {.add_bos = false, .parse_special = true}).value_or_throw() == expected);
}

TEST_CASE("tokenizer: nomic-bert-moe's unigram model") {
  const std::optional<Pipeline> tokenizer = load("ggml-vocab-nomic-bert-moe.gguf");
  if (!tokenizer) return;
  CHECK(tokenizer->vocabulary().model == Model::unigram);
  CHECK_FALSE(tokenizer->vocabulary().precompiled_charsmap.empty());
  // XLM-R's well-known ids, with <s> and </s> from the metadata flags.
  CHECK(tokenizer->encode("Hello world").value_or_throw() == std::vector<int32_t>{0, 35378, 8999, 2});

  // Normalisation: NFKC through the precompiled charsmap (composed accents,
  // ligatures, circled digits, full-width letters), spaces collapsed.
  const auto same = [&](const std::string& a, const std::string& b) {
    CAPTURE(a);
    CHECK(tokenizer->encode(a).value_or_throw() == tokenizer->encode(b).value_or_throw());
  };
  same("e\xCC\x81t\xC3\xA9", "\xC3\xA9t\xC3\xA9");
  same("\xEF\xAC\x81ne", "fine");
  same("\xE2\x91\xA0", "1");
  same("\xEF\xBC\xA1\xEF\xBC\xA2\xEF\xBC\xA3", "ABC");
  same("  Hello \t\n  world  ", "Hello world");
  CHECK(tokenizer->decode(tokenizer->encode("e\xCC\x81t\xC3\xA9  a").value_or_throw()).value_or_throw() == "\xC3\xA9t\xC3\xA9 a");
  CHECK(tokenizer->encode("", kRaw).value_or_throw().empty());
  CHECK(tokenizer->encode(" \t ", kRaw).value_or_throw().empty());

  // <mask> swallows the spaces before it (llama.cpp's rule for this architecture).
  const std::vector<int32_t> masked = tokenizer->encode("Hello   <mask>", {.add_bos = false, .add_eos = false, .parse_special = true}).value_or_throw();
  CHECK(masked == std::vector<int32_t>{35378, 250001});

  // Viterbi against an independent search: the best score of any
  // segmentation of the normalised text into tokens, found by trying every
  // substring against the vocabulary.
  for (const std::string text : {"Hello world", "The quick brown fox jumps over the lazy dog",
                                 "unbelievably tokenization antidisestablishmentarianism", "a b c d e f g"}) {
    std::string normalized = "\xE2\x96\x81";
    for (const char c : text) normalized += c == ' ' ? std::string("\xE2\x96\x81") : std::string(1, c);
    std::vector<double> best(normalized.size() + 1, -INFINITY);
    best[0] = 0;
    for (size_t start = 0; start < normalized.size(); ++start) {
      if (!std::isfinite(best[start])) continue;
      for (size_t length = 1; length <= 48 && start + length <= normalized.size(); ++length) {
        const auto id = tokenizer->find(normalized.substr(start, length));
        if (!id || tokenizer->type(*id).value_or_throw() != TokenType::normal) continue;
        best[start + length] = std::max(best[start + length], best[start] + tokenizer->vocabulary().scores[*id]);
      }
    }
    double ours = 0;
    for (const int32_t id : tokenizer->encode(text, kRaw).value_or_throw()) ours += tokenizer->vocabulary().scores[static_cast<size_t>(id)];
    CAPTURE(text);
    REQUIRE(std::isfinite(best.back()));
    CHECK(ours == doctest::Approx(best.back()).epsilon(1e-12));
  }
}

// The time is printed, never asserted (machines are shared and noisy): a
// quadratic step would show as minutes here and in attendre-tokenize.
TEST_CASE("tokenizer: a megabyte of text encodes, between one id per byte and one per 16 bytes") {
  const auto models = shared_models();
  if (!models) return;
  const std::string seed = slurp(*models / "vocab" / "ggml-vocab-llama-bpe.gguf.inp");
  std::string text;
  while (text.size() < (1u << 20)) text += seed;
  for (const std::string name : {"llama-spm", "llama-bpe", "nomic-bert-moe"}) {
    const Pipeline tokenizer = Pipeline::from_gguf(gguf::File::open(*models / "vocab" / ("ggml-vocab-" + name + ".gguf")).value_or_throw()).value_or_throw();
    const auto start = std::chrono::steady_clock::now();
    const std::vector<int32_t> ids = tokenizer.encode(text).value_or_throw();
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    MESSAGE(name << ": " << text.size() << " bytes -> " << ids.size() << " ids in " << seconds << " s");
    // Every character lands in some id, and no id is shorter than a byte.
    CHECK(ids.size() <= text.size() + 1);
    CHECK(ids.size() > text.size() / 16);
  }
}
