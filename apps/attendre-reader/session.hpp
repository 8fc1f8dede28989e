// Everything a reader session reports, gathered once for the three views
// of it: the terminal summary, the JSON file and the HTML report.
#pragma once

#include "options.hpp"
#include "results.hpp"
#include "survey.hpp"

#include <attendre/stack.hpp>

#include <string>
#include <vector>

namespace reader {

struct NeedleInfo {
  std::string key, answer, fact;
  double requested_depth = 0.0;  // where the haystack was asked to put it
  PositionRange positions;
  double depth = 0.0;  // where it landed: its first token's place in the context, in [0, 1]
};

// A run of positions one memory held at the end, with the text they cover.
struct Passage {
  int64_t first = 0, last = 0;
  uint32_t held = 0;  // positions held in [first, last]
  bool question = false;
  int needle = -1;    // the needle it overlaps, -1 for none
  std::string text;   // the document's text over [first, last], cut at kMaxText bytes
  static constexpr size_t kMaxText = 600;
};

struct Session {
  std::string device;  // "llvmpipe (LLVM 15.0.6, 256 bits)" or "cpu (float64 reference)"
  std::string backend_kind, backend_description;
  std::vector<std::string> block_roles;
  std::string source;       // "built-in haystack", "haystack" or "text"
  std::string source_name;  // the file, or how the haystack was generated
  std::string question, template_text;
  std::string weights;      // "f32", "f16", or "f32 (no 16-bit storage on this device)"
  Survey survey;
  std::vector<NeedleInfo> needles;
  attendre::StackConfig config;  // the memory every run shares (policies aside)
  MemorySettings memory;
  std::vector<RunResult> runs;
  std::vector<std::vector<Passage>> passages;  // per run: what the last block held
  double yardstick_seconds = 0.0;
  uint64_t yardstick_queries = 0;
};

}  // namespace reader
