#include "summary.hpp"

#include "common/human_bytes.hpp"
#include "memory_settings.hpp"

#include <algorithm>
#include <cmath>

namespace reader {
namespace {

constexpr size_t kPassagesShown = 8;
constexpr size_t kTextShown = 72;

std::string percent(double fraction) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%.0f%%", 100.0 * fraction);
  return buf;
}

// A list flag's values as typed: "128" or "64,128,256".
std::string values(const std::vector<uint32_t>& list) {
  std::string text;
  for (uint32_t v : list) text.append(text.empty() ? "" : ",").append(std::to_string(v));
  return text;
}

// One line of a passage's text: newlines and tabs as spaces, cut with "...".
std::string one_line(const std::string& text, size_t width) {
  std::string line;
  for (char c : text) {
    if (c == '\n' || c == '\r' || c == '\t') c = ' ';
    if (c == ' ' && !line.empty() && line.back() == ' ') continue;
    line += c;
  }
  if (line.size() <= width) return line;
  size_t cut = width - 3;
  while (cut > 0 && (static_cast<unsigned char>(line[cut]) & 0xC0) == 0x80) --cut;  // not inside a character
  return line.substr(0, cut) + "...";
}

std::string role(const Passage& p) {
  if (p.question) return "question";
  if (p.needle >= 0) return "needle " + std::to_string(p.needle + 1);
  return "";
}

}  // namespace

std::string grouped(uint64_t value) {
  std::string digits = std::to_string(value), text;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) text += ',';
    text += digits[i];
  }
  return text;
}

std::string memory_line(const Session& s) {
  const MemorySettings& m = s.memory;
  std::string line = "chunk S=" + std::to_string(m.chunk) + ", N=" + values(m.q_capacity) + " M=" + values(m.kv_capacity) +
                     " K=" + values(m.top_k) + ", sinks " + values(m.sinks) + ", initial score ";
  char buf[64];
  if (m.init_const) std::snprintf(buf, sizeof buf, "%g", *m.init_const);
  else std::snprintf(buf, sizeof buf, "mu-%g*sigma", m.init_k.value_or(1.0));
  line += buf;
  std::snprintf(buf, sizeof buf, ", lambda %g, ", m.lambda);
  line += buf;
  line += m.flush ? "flush" : "drain";
  for (const attendre::BlockConfig& b : s.config.blocks)
    if (b.lm_infinite.enabled) {
      line += ", LM-Infinite n_local=" + std::to_string(b.lm_infinite.n_local);
      break;
    }
  return line + ", " + s.weights + " weights";
}

void print_configuration(const Session& s, const std::vector<PolicyList>& runs, std::FILE* out) {
  std::fprintf(out, "attendre-reader on %s\n", s.device.c_str());
  std::fprintf(out, "model     %s\n", s.backend_description.c_str());
  std::fprintf(out, "document  %s (%s): %s tokens", s.source.c_str(), s.source_name.c_str(),
               grouped(static_cast<uint64_t>(s.survey.tokens)).c_str());
  if (!s.needles.empty()) {
    std::fprintf(out, ", %zu needle%s at depth", s.needles.size(), s.needles.size() == 1 ? "" : "s");
    for (const NeedleInfo& n : s.needles) std::fprintf(out, " %s", percent(n.depth).c_str());
  }
  std::fprintf(out, "\nquestion  %s\n", s.question.c_str());
  std::fprintf(out, "stack     %zu blocks", s.config.blocks.size());
  if (!s.block_roles.empty()) {
    std::fprintf(out, " (");
    for (size_t l = 0; l < s.block_roles.size(); ++l) std::fprintf(out, "%s%s", l ? ", " : "", s.block_roles[l].c_str());
    std::fprintf(out, ")");
  }
  std::fprintf(out, ", hidden %u\nmemory    %s\n", s.config.hidden, memory_line(s).c_str());
  const attendre::MemoryPreset& preset = attendre::reader_memory_preset();
  std::fprintf(out, "preset    %.*s (%s, lambda for lfa; the memory flags change it)\n", static_cast<int>(preset.name.size()),
               preset.name.data(), attendre::describe(preset.plan).c_str());
  std::fprintf(out, "policies ");
  for (size_t r = 0; r < runs.size(); ++r) std::fprintf(out, "%s %s", r ? "," : "", label(runs[r]).c_str());
  std::fprintf(out, "\n");
  std::fflush(out);
}

void print_results(const Session& s, std::FILE* out) {
  size_t width = 6;
  for (const RunResult& r : s.runs) width = std::max(width, r.label.size());
  // The table: one row per run.
  std::fprintf(out, "\n%-*s", static_cast<int>(width), "policy");
  for (const NeedleInfo& n : s.needles) std::fprintf(out, "  @%4s", percent(n.depth).c_str());
  std::fprintf(out, "  %7s  %9s  %10s\n", "mass", "tokens/s", "GPU memory");
  for (const RunResult& r : s.runs) {
    std::fprintf(out, "%-*s", static_cast<int>(width), r.label.c_str());
    for (const NeedleInfo& n : s.needles)
      std::fprintf(out, "  %5s", r.last_block().held_in(n.positions.first, n.positions.last) > 0 ? "kept" : "lost");
    const std::string mass = r.mass ? percent(r.mass->value) : "n/a";
    const std::string memory = r.device_bytes ? attendre::apps::human_bytes(*r.device_bytes) : "-";
    std::fprintf(out, "  %7s  %9s  %10s\n", mass.c_str(), grouped(std::llround(r.tokens_per_second(s.survey.tokens))).c_str(),
                 memory.c_str());
  }
  std::fprintf(out, "\n");
  if (!s.needles.empty())
    std::fprintf(out, "@depth: the needle planted there is kept when any of its tokens is in the last block's memory\n"
                      "after the %s.\n", s.memory.flush ? "flush" : "drain");
  if (s.runs.front().mass)
    std::fprintf(out, "mass: share of full attention's weight on what block 0 held when each query retrieved\n"
                      "(float64, over %s queries).\n", grouped(s.runs.front().mass->queries).c_str());
  for (size_t i = 0; i < s.needles.size(); ++i)
    std::fprintf(out, "needle %zu at %s, positions %lld-%lld: %s\n", i + 1, percent(s.needles[i].depth).c_str(),
                 static_cast<long long>(s.needles[i].positions.first), static_cast<long long>(s.needles[i].positions.last),
                 s.needles[i].fact.c_str());

  // What each memory kept.
  for (size_t r = 0; r < s.runs.size(); ++r) {
    const std::vector<Passage>& passages = s.passages[r];
    const BlockRetention& last = s.runs[r].last_block();
    std::fprintf(out, "\n%s kept %zu of %u positions in the last block, in %zu passage%s:\n", s.runs[r].label.c_str(),
                 last.positions.size(), last.capacity, passages.size(), passages.size() == 1 ? "" : "s");
    // The question and the needles first, then the rest in document order.
    std::vector<const Passage*> shown;
    for (const Passage& p : passages)
      if (p.question || p.needle >= 0) shown.push_back(&p);
    for (const Passage& p : passages)
      if (!p.question && p.needle < 0 && shown.size() < kPassagesShown) shown.push_back(&p);
    std::sort(shown.begin(), shown.end(), [](const Passage* a, const Passage* b) { return a->first < b->first; });
    for (const Passage* p : shown) {
      const std::string range = std::to_string(p->first) + "-" + std::to_string(p->last);
      std::fprintf(out, "  %-11s %-9s %s\n", range.c_str(), role(*p).c_str(), one_line(p->text, kTextShown).c_str());
    }
    if (shown.size() < passages.size()) std::fprintf(out, "  ... and %zu more\n", passages.size() - shown.size());
    if (s.runs[r].answer) std::fprintf(out, "answer: %s\n", s.runs[r].answer->c_str());
  }
  std::fflush(out);
}

}  // namespace reader
