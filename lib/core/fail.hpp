// Raising attendre::Error from inside the library and its tools: one line,
// a code, the problem named. Internal: apps see only attendre::Error.
#pragma once

#include <attendre/error.hpp>
#include <attendre/status.hpp>

#include <new>
#include <string>
#include <type_traits>

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

// The seam where code that still throws meets the interfaces that return
// values: runs `body` and returns its value (a Status for void), or the
// attendre::Error it threw as a failed Status with the same code and
// message (std::bad_alloc as out_of_host_memory). Leaves with the code
// behind it once that returns values itself.
template <class F>
auto capture(F&& body) {
  using T = std::invoke_result_t<F&>;
  using Out = std::conditional_t<std::is_void_v<T>, Status, Result<T>>;
  try {
    if constexpr (std::is_void_v<T>) {
      body();
      return Out{};
    } else {
      return Out(body());
    }
  } catch (const Error& e) {
    return Out(Status(e.code(), e.what()));
  } catch (const std::bad_alloc&) {
    return Out(Status(ErrorCode::out_of_host_memory, "out of host memory"));
  }
}
#endif

}  // namespace attendre
