#include "survey.hpp"

#include "core/fail.hpp"

namespace reader {
namespace {

void extend(PositionRange& range, int64_t position) {
  if (range.empty()) range.first = position;
  range.last = position;
}

}  // namespace

Survey survey_document(Document& document, TokenStream& tokenizer, size_t needles) {
  Survey s;
  s.needles.resize(needles);
  document.walk(tokenizer, [&](const TokenView& t) {
    ++s.tokens;
    if (t.token.part == Part::question) extend(s.question, t.position);
    if (t.token.part == Part::context) extend(s.context, t.position);
    if (t.needle >= 0) extend(s.needles[static_cast<size_t>(t.needle)], t.position);
  });
  attendre::require(s.tokens > 0, "the document has no tokens to read");
  for (size_t i = 0; i < needles; ++i)
    attendre::require(!s.needles[i].empty(), "needle " + std::to_string(i + 1) + " has no tokens");
  return s;
}

}  // namespace reader
