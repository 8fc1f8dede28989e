#include "tool_main.hpp"

#include <cstdio>

namespace attendre::apps {

void report_error(std::string_view tool, const std::string& message) {
  std::string line(tool);
  line.append(": ").append(message);
  for (char& c : line)
    if (c == '\n' || c == '\r') c = ' ';
  std::fprintf(stderr, "%s\n", line.c_str());
}

}  // namespace attendre::apps
