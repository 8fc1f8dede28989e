// The terminal view of a session: the configuration before the runs, and
// after them one table (needles kept by depth, retained attention mass,
// tokens/s, GPU memory) with what each memory kept, passage by passage.
#pragma once

#include "session.hpp"

#include <cstdio>

namespace reader {

void print_configuration(const Session& session, const std::vector<PolicyList>& runs, std::FILE* out);
void print_results(const Session& session, std::FILE* out);

// "1,234,567".
std::string grouped(uint64_t value);
// The memory settings in one line: "chunk S=32, N=32 M=128 K=32, sinks 0, ...".
std::string memory_line(const Session& session);

}  // namespace reader
