// The --json output (schema: SCHEMA.md), written with nlohmann::json.
#pragma once

#include "results.hpp"

#include <string>

namespace bench {

std::string to_json(const Results& results);

}  // namespace bench
