// The document's text for the report, with what each memory kept marked.
#include "html_report.hpp"

#include <algorithm>

namespace reader {
namespace {

// Tokens this close to a kept position, a needle or the question are shown
// when a long document is cut to excerpts.
constexpr int64_t kExcerptContext = 12;

// Positions worth showing: the last block's held positions of every run,
// the needles and the question, as sorted, merged intervals widened by
// kExcerptContext.
std::vector<PositionRange> shown_ranges(const Session& s) {
  std::vector<PositionRange> ranges;
  const auto add = [&](int64_t first, int64_t last) {
    ranges.push_back({std::max<int64_t>(0, first - kExcerptContext), last + kExcerptContext});
  };
  for (const RunResult& r : s.runs)
    for (int64_t p : r.last_block().positions) add(p, p);
  for (const NeedleInfo& n : s.needles) add(n.positions.first, n.positions.last);
  if (!s.survey.question.empty()) add(s.survey.question.first, s.survey.question.last);
  std::sort(ranges.begin(), ranges.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<PositionRange> merged;
  for (const PositionRange& r : ranges) {
    if (!merged.empty() && r.first <= merged.back().last + 1) merged.back().last = std::max(merged.back().last, r.last);
    else merged.push_back(r);
  }
  return merged;
}

}  // namespace

std::string html_escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string html_document_text(const Session& s, Document& document, TokenStream& tokenizer) {
  const bool whole = document.context().size() <= kFullTextBytes;
  const std::vector<PositionRange> shown = whole ? std::vector<PositionRange>{} : shown_ranges(s);
  size_t next_range = 0;
  bool cut = false, gap_pending = false;
  std::string html;
  document.walk(
      tokenizer,
      [&](const TokenView& t) {
        if (html.size() >= kMaxTextBytes) {
          cut = true;
          return;
        }
        if (!whole) {
          while (next_range < shown.size() && shown[next_range].last < t.position) ++next_range;
          if (next_range == shown.size() || !shown[next_range].contains(t.position)) {
            gap_pending = true;
            return;
          }
          if (gap_pending) html += "<span class=\"cut\"> [&hellip;] </span>";
          gap_pending = false;
        }
        html += html_escape(t.gap);
        std::string classes;
        for (size_t r = 0; r < s.runs.size(); ++r)
          if (s.runs[r].last_block().holds(t.position)) classes += " r" + std::to_string(r);
        if (t.needle >= 0) classes += " n";
        if (t.token.part == Part::question) classes += " q";
        if (classes.empty()) {
          html += html_escape(t.text);
        } else {
          html += "<span class=\"" + classes.substr(1) + "\">" + html_escape(t.text) + "</span>";
        }
      },
      [&](std::string_view trailing) {
        if (whole && !cut) html += html_escape(trailing);
      });
  if (!whole || cut)
    html += "<p class=\"note\">" + std::string(cut ? "The text is cut here to keep the report small." :
                                                   "Only the passages around what was kept are shown.") + "</p>";
  return html;
}

}  // namespace reader
