// Streaming a long document into a tokenizer: cut at continuation points
// and encoded piece by piece with `continuation`, it gives exactly the ids of
// the whole text, on every real vocabulary (and their reference inputs, rich
// in odd spacing and scripts). The reader tokenizes documents of any length so.
#include "gguf_test_support.hpp"

#include "gguf/gguf.hpp"
#include "text/tokenizer.hpp"

#include <doctest/doctest.h>

#include <cctype>
#include <filesystem>
#include <string>
#include <vector>

namespace attendre {
namespace {

using attendre::test::shared_models;
using attendre::test::slurp;

const std::string kDocument =
    "Once upon a time, in a  land far away, there lived a cat.\n"
    "  She liked fish (a lot) and naps: 12,345 of them!\n"
    "\n"
    "Code: for (int i = 0; i < n; ++i) { sum += x[i]; }\n"
    "\t\tTabs, then text. 东京は晴れ。 Ünïcödé — and emoji 🐈‍⬛ too.\n"
    "The end.\n"
    "Trailing spaces   \n"
    "x";

// `text` cut at continuation points about every `step` bytes (further where
// a stretch has none).
std::vector<std::string> cut(const std::string& text, size_t step) {
  std::vector<std::string> pieces;
  size_t start = 0;
  while (true) {
    const std::string_view rest = std::string_view(text).substr(start);
    size_t point = 0;
    for (size_t limit = step; point == 0 && limit < rest.size(); limit *= 2)
      point = tokenizer::Pipeline::continuation_point(rest, limit);
    if (point == 0) break;
    pieces.push_back(text.substr(start, point));
    start += point;
  }
  pieces.push_back(text.substr(start));
  return pieces;
}

std::vector<int32_t> encode_pieces(const tokenizer::Pipeline& t, const std::vector<std::string>& pieces) {
  std::vector<int32_t> ids;
  for (size_t i = 0; i < pieces.size(); ++i) {
    tokenizer::EncodeOptions options;
    options.continuation = i > 0;
    options.more_follows = i + 1 < pieces.size();
    const std::vector<int32_t> piece = t.encode(pieces[i], options).value_or_throw();
    ids.insert(ids.end(), piece.begin(), piece.end());
  }
  return ids;
}

TEST_CASE("tokenizer: continuation points are spaces between a word and a letter, the last one before the limit") {
  using tokenizer::Pipeline;
  CHECK(Pipeline::continuation_point("one two three", 100) == 7);
  CHECK(Pipeline::continuation_point("one two three", 6) == 3);
  CHECK(Pipeline::continuation_point("one two three", 2) == 0);
  CHECK(Pipeline::continuation_point("a  b. c 'd 1 e", 100) == 12);  // "1 e": a digit before is fine
  CHECK(Pipeline::continuation_point("a  b. c 'd", 100) == 0);       // double space, punctuation, quote
  CHECK(Pipeline::continuation_point("东京 は", 100) == 0);
  CHECK(Pipeline::continuation_point("", 5) == 0);
  CHECK(Pipeline::continuation_point("a b", 0) == 0);
  CHECK(Pipeline::continuation_point("a b", 1) == 1);
}

TEST_CASE("tokenizer: a document encoded piece by piece at continuation points gives the ids of the whole") {
  const auto models = shared_models();
  if (!models) {
    MESSAGE("skipped: ../shared/models is absent");
    return;
  }
  std::vector<std::filesystem::path> files = {*models / "stories260K.gguf", *models / "aidreams260K.gguf"};
  for (const auto& entry : std::filesystem::directory_iterator(*models / "vocab"))
    if (entry.path().extension() == ".gguf") files.push_back(entry.path());
  std::string document;
  for (const auto& entry : std::filesystem::directory_iterator(*models / "vocab"))
    if (entry.path().extension() == ".inp") document += slurp(entry.path());
  document += kDocument;
  size_t compared = 0;
  for (const auto& path : files) {
    INFO(path.filename().string());
    tokenizer::Pipeline t = tokenizer::Pipeline::from_gguf(gguf::File::open(path).value_or_throw()).value_or_throw();
    const std::vector<int32_t> whole = t.encode(document, tokenizer::EncodeOptions{}).value_or_throw();
    for (const size_t step : {7u, 60u, 1000u}) {
      const std::vector<std::string> pieces = cut(document, step);
      INFO(step << " -> " << pieces.size() << " pieces");
      REQUIRE(pieces.size() >= (step < 100 ? 20u : 3u));
      CHECK(encode_pieces(t, pieces) == whole);
    }
    // The comparison sees a cut inside a word (somewhere: tiny vocabularies
    // spell most words letter by letter), and pieces that restart the text
    // (a BOS, or a space prefix) instead of continuing it.
    bool cut_inside_word_seen = false;
    for (size_t i = document.size() - kDocument.size(); i < document.size() && !cut_inside_word_seen; ++i)
      if (std::isalpha(static_cast<unsigned char>(document[i - 1])) && std::isalpha(static_cast<unsigned char>(document[i])))
        cut_inside_word_seen = encode_pieces(t, {document.substr(0, i), document.substr(i)}) != whole;
    CHECK(cut_inside_word_seen);
    const tokenizer::Vocabulary& v = t.vocabulary();
    if (v.add_bos || (v.add_space_prefix && v.model != tokenizer::Model::byte_level_bpe)) {
      std::vector<int32_t> restarted;
      for (const std::string& piece : cut(document, 60)) {
        const std::vector<int32_t> ids = t.encode(piece, tokenizer::EncodeOptions{}).value_or_throw();
        restarted.insert(restarted.end(), ids.begin(), ids.end());
      }
      CHECK(restarted != whole);
    }
    ++compared;
  }
  CHECK(compared >= 10);
}

}  // namespace
}  // namespace attendre
