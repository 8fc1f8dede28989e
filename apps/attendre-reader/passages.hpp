// What a memory held at the end, as a reader would look at it: runs of
// held positions joined across small gaps, each with the document's text.
#pragma once

#include "document.hpp"
#include "results.hpp"
#include "session.hpp"

#include <vector>

namespace reader {

// Held positions closer than this are one passage.
inline constexpr int64_t kPassageJoin = 3;

// The passages of `block`, with whether each overlaps the question or a needle.
std::vector<Passage> group_passages(const BlockRetention& block, const Survey& survey);

// Fills the text of every passage in `runs` in one walk over the document.
void fill_passage_texts(Document& document, TokenStream& tokenizer, std::vector<std::vector<Passage>>& runs);

}  // namespace reader
