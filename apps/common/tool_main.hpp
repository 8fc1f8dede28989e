// What every command-line tool does at its edge: failures reported as one
// line on stderr, prefixed by the tool's name, with the exit statuses the
// tools share (0 success, 1 input/configuration/runtime error, 2 usage
// error; 3, validation messages, is the tool's own to return).
#pragma once

#include "flag_names.hpp"

#include <attendre/error.hpp>

#include <exception>
#include <new>
#include <string>
#include <string_view>

namespace attendre::apps {

// Scripts read stderr line by line, so a message never spans lines:
// newlines become spaces.
void report_error(std::string_view tool, const std::string& message);

// Runs `work`, rethrowing the library's errors with the flags named for the
// configuration fields they mention (the user typed flags, not fields).
template <class Work>
auto naming_flags(Work&& work) {
  try {
    return work();
  } catch (const Error& e) {
    throw Error(e.code(), with_flag_names(e.what()));
  }
}

// main()'s body for a tool whose command-line mistakes are `UsageError`s.
template <class UsageError, class Body>
int guarded_main(std::string_view tool, Body&& body) {
  try {
    return body();
  } catch (const UsageError& e) {
    report_error(tool, std::string(e.what()) + " (see --help)");
    return 2;
  } catch (const Error& e) {
    report_error(tool, e.what());
    return 1;
  } catch (const std::bad_alloc&) {
    // Sizes a tool can foresee are refused up front with their figures;
    // this is what slipped past, so no flag is blamed.
    report_error(tool, "out of host memory");
    return 1;
  } catch (const std::exception& e) {
    report_error(tool, e.what());
    return 1;
  } catch (...) {
    report_error(tool, "unknown error");
    return 1;
  }
}

}  // namespace attendre::apps
