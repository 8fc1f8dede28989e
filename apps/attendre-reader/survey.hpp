// The first walk over a document, before any device work: it checks the
// whole input (UTF-8, readability) so that a bad file fails before a run
// starts, and finds what the later walks and the results refer to: the
// token count, where the question, the context and each needle sit.
#pragma once

#include "document.hpp"

#include <cstdint>
#include <vector>

namespace reader {

struct PositionRange {
  int64_t first = -1, last = -1;  // inclusive; -1 when empty
  bool empty() const { return first < 0; }
  bool contains(int64_t p) const { return p >= first && p <= last; }
  int64_t size() const { return empty() ? 0 : last - first + 1; }
};

struct Survey {
  int64_t tokens = 0;
  PositionRange question, context;
  std::vector<PositionRange> needles;  // in the document's needle order
};

// Throws what the walk throws; invalid_argument for a document without
// tokens, or whose needle produced none.
Survey survey_document(Document& document, TokenStream& tokenizer, size_t needles);

}  // namespace reader
