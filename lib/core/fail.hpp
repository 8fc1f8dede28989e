// Raising attendre::Error from inside the library and its tools: one line,
// a code, the problem named. Internal: apps see only attendre::Error.
#pragma once

#include <attendre/error.hpp>

#include <string>

namespace attendre {

// Throws Error(code, message). Kept out of line so call sites stay small.
[[noreturn]] void fail(ErrorCode code, const std::string& message);

// Throws invalid_argument with `message` unless `condition` holds.
inline void require(bool condition, const std::string& message) {
  if (!condition) fail(ErrorCode::invalid_argument, message);
}

}  // namespace attendre
