// The --json output (schema: SCHEMA.md), written with nlohmann::json,
// and files written whole or not at all (a temporary file, then rename).
#pragma once

#include "results.hpp"

#include <string>

namespace bench {

std::string to_json(const Results& results);

// Writes `content` to `path` through `path`.tmp and a rename, so a reader
// never sees a partial file. Throws attendre::Error(io_error) on failure.
void write_file_atomically(const std::string& path, const std::string& content);

}  // namespace bench
