#include "passages.hpp"

#include <algorithm>

namespace reader {

std::vector<Passage> group_passages(const BlockRetention& block, const Survey& survey) {
  std::vector<Passage> passages;
  for (int64_t p : block.positions) {
    if (!passages.empty() && p - passages.back().last <= kPassageJoin) {
      passages.back().last = p;
      ++passages.back().held;
    } else {
      passages.push_back({p, p, 1});
    }
  }
  for (Passage& passage : passages) {
    passage.question = survey.question.contains(passage.first) || survey.question.contains(passage.last) ||
                       (passage.first < survey.question.first && passage.last > survey.question.last);
    for (size_t i = 0; i < survey.needles.size() && passage.needle < 0; ++i)
      if (passage.first <= survey.needles[i].last && passage.last >= survey.needles[i].first)
        passage.needle = static_cast<int>(i);
  }
  return passages;
}

void fill_passage_texts(Document& document, TokenStream& tokenizer, std::vector<std::vector<Passage>>& runs) {
  // Every passage of every run, by first position, walked with the document.
  std::vector<Passage*> order;
  for (auto& run : runs)
    for (Passage& p : run) order.push_back(&p);
  std::sort(order.begin(), order.end(), [](const Passage* a, const Passage* b) { return a->first < b->first; });
  size_t next = 0;
  std::vector<Passage*> open;
  document.walk(tokenizer, [&](const TokenView& t) {
    while (next < order.size() && order[next]->first == t.position) open.push_back(order[next++]);
    for (Passage* p : open) {
      if (p->text.size() >= Passage::kMaxText) continue;
      if (t.position > p->first) p->text.append(t.gap);
      p->text.append(t.text);
    }
    std::erase_if(open, [&](const Passage* p) { return p->last == t.position; });
  });
  // Cut on a character boundary: the text goes into JSON and HTML.
  for (Passage* p : order)
    if (p->text.size() > Passage::kMaxText) p->text.resize(utf8_prefix(std::string_view(p->text).substr(0, Passage::kMaxText)).valid);
}

}  // namespace reader
