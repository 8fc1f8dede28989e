// The demo's command line. Everything has a default: a newcomer runs it bare.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

namespace demo {

struct Options {
  uint32_t tokens = 1536;
  uint32_t memory = 128;  // K/V capacity M
  bool gpu = true;
  bool help = false;
};

// A bad command line: main prints the message on one line and exits 2.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Throws UsageError naming the first problem.
Options parse_options(int argc, char** argv);

std::string usage_text();

}  // namespace demo
