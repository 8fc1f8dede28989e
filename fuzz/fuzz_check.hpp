// What a fuzz target asserts beyond "no crash": a broken invariant aborts
// with a message, which libFuzzer records as a failing input (and
// replay_main reports by dying), whatever the build's NDEBUG.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string>

namespace attendre::fuzz {

inline void check(bool condition, const char* invariant, const std::string& detail = "") {
  if (condition) return;
  std::fprintf(stderr, "fuzz invariant broken: %s: %s\n", invariant, detail.c_str());
  std::abort();
}

// Messages are one line: scripts grep the tools' stderr line by line.
inline void check_one_line(const std::string& message) {
  check(!message.empty() && message.find('\n') == std::string::npos, "a one-line message", message);
}

}  // namespace attendre::fuzz
