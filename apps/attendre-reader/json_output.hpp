// --json: the session as one JSON document (schema "attendre-reader/1",
// documented in apps/attendre-reader/SCHEMA.md).
#pragma once

#include "session.hpp"

#include <string>

namespace reader {

std::string json_text(const Session& session);

}  // namespace reader
