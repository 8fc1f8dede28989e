// Raising attendre::Error from inside the library and its tools: one line,
// a code, the problem named. Internal: apps see only attendre::Error.
#pragma once

#include <attendre/error.hpp>

#include <string>

namespace attendre {

// Code still on the way to errors as values (include/attendre/status.hpp)
// raises with these; a file built without exceptions (the ratchet in
// tests/CMakeLists.txt) cannot call them.
#if defined(__cpp_exceptions)
// Throws Error(code, message). Kept out of line so call sites stay small.
[[noreturn]] void fail(ErrorCode code, const std::string& message);

// Throws invalid_argument with `message` unless `condition` holds.
inline void require(bool condition, const std::string& message) {
  if (!condition) fail(ErrorCode::invalid_argument, message);
}
#endif

}  // namespace attendre
