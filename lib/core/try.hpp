// Propagating failures as values inside the library (include/attendre/status.hpp):
// each macro returns the failed Status from the enclosing function, which
// returns a Status or a Result. Internal: applications see Status and Result.
#pragma once

#include <attendre/status.hpp>

#include <utility>

namespace attendre::detail {

inline Status take_status(Status&& status) { return std::move(status); }
template <class T>
Status take_status(Result<T>&& result) {
  return std::move(result).status();
}

}  // namespace attendre::detail

// Returns the failure of `expr` (a Status or a Result) from the enclosing function.
#define ATTENDRE_TRY(expr)                                                                      \
  do {                                                                                          \
    auto attendre_try_outcome_ = (expr);                                                        \
    if (!attendre_try_outcome_.ok()) return ::attendre::detail::take_status(std::move(attendre_try_outcome_)); \
  } while (false)

// `lhs` (a declaration or an lvalue) takes the value of `expr` (a Result);
// its failure is returned from the enclosing function.
#define ATTENDRE_TRY_ASSIGN(lhs, expr) ATTENDRE_TRY_ASSIGN_(ATTENDRE_TRY_CAT_(attendre_result_, __LINE__), lhs, expr)
#define ATTENDRE_TRY_CAT_(a, b) ATTENDRE_TRY_CAT2_(a, b)
#define ATTENDRE_TRY_CAT2_(a, b) a##b
#define ATTENDRE_TRY_ASSIGN_(result, lhs, expr)          \
  auto result = (expr);                                  \
  if (!result.ok()) return std::move(result).status(); \
  lhs = std::move(result).value()

// Returns invalid_argument(`message`) unless `condition` holds; the message
// is built only on failure.
#define ATTENDRE_REQUIRE(condition, message)                                 \
  do {                                                                       \
    if (!(condition)) return ::attendre::invalid_argument(message);         \
  } while (false)
