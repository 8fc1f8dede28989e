// The demo's command line. Everything has a default: a newcomer runs it bare.
#pragma once

#include "../common/arguments.hpp"

#include <cstdint>
#include <string>

namespace demo {

struct Options {
  uint32_t tokens = 1536;
  uint32_t memory = 128;  // K/V capacity M
  bool gpu = true;
  bool help = false;
};

// A bad command line (the tools' one, apps/common): main prints the
// message on one line and exits 2.
using attendre::cli::UsageError;

// Throws UsageError naming the first problem.
Options parse_options(int argc, char** argv);

std::string usage_text();

}  // namespace demo
