// Shared by the attendre-reader tests: running the built tool, reading its
// JSON, and the small haystack every test reads (fast under validation).
#pragma once

#ifdef ATTENDRE_READER_BINARY

#include "support.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <set>
#include <string>
#include <vector>

namespace attendre::test::reader {

inline std::string quote(const std::string& s) { return "'" + s + "'"; }

inline ToolStreams run_reader(const std::string& args, const std::string& shell_prefix = "") {
  return run_tool_streams(ATTENDRE_READER_BINARY, args, shell_prefix);
}

// 1,200 tokens of filler with needles at 10%, 50% and 80%; M = 192 holds
// under a sixth of it, so a memory that keeps the recent past loses all
// three and one that keeps what the question asks for keeps them.
inline const std::string kHaystack = "--haystack-tokens 1200 --depths 0.1,0.5,0.8 --seed 7 --kv-capacity 192 --quiet";

inline nlohmann::json read_json(const std::filesystem::path& path) {
  const std::string text = slurp(path);
  REQUIRE_MESSAGE(!text.empty(), "no JSON at " << path);
  return nlohmann::json::parse(text);
}

// Whether run `run`'s block `block` holds any token of needle `needle`.
inline bool needle_held(const nlohmann::json& run, size_t needle, size_t block) {
  return run.at("needles").at(needle).at("held_per_block").at(block).get<uint32_t>() > 0;
}

inline std::vector<int64_t> held(const nlohmann::json& run, size_t block) {
  return run.at("blocks").at(block).at("held").get<std::vector<int64_t>>();
}

// |a n b| / |a u b|.
inline double overlap(const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
  const std::set<int64_t> sa(a.begin(), a.end()), sb(b.begin(), b.end());
  size_t common = 0;
  for (int64_t p : sa) common += sb.count(p);
  const size_t all = sa.size() + sb.size() - common;
  return all == 0 ? 1.0 : static_cast<double>(common) / static_cast<double>(all);
}

}  // namespace attendre::test::reader

#endif
