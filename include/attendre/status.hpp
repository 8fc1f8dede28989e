// Errors as values: the layer under the C++ API, so that the library builds
// and works with -fno-exceptions (many Android apps use it).
//
// A function that can fail returns a Status (ok, or an ErrorCode and the
// one-line message naming the problem) or a Result<T> (a T, or the Status
// saying why there is none). Each call of the C++ API exists once, in this
// form; the throwing form of any of them is generated here, in one place:
// Result::value_or_throw() and Status::or_throw(), inline, so they exist
// exactly where the application has exceptions; the library's own code
// never needs to throw. The C API reads the same
// statuses.
#pragma once

#include <attendre/error.hpp>

#include <cassert>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

namespace attendre {

class [[nodiscard]] Status {
 public:
  Status() = default;  // ok
  Status(ErrorCode code, std::string message) : failure_(std::make_unique<Failure>(code, std::move(message))) {}
  Status(const Status& other) : failure_(other.failure_ ? std::make_unique<Failure>(*other.failure_) : nullptr) {}
  Status(Status&&) noexcept = default;
  Status& operator=(const Status& other) {
    if (this != &other) failure_ = other.failure_ ? std::make_unique<Failure>(*other.failure_) : nullptr;
    return *this;
  }
  Status& operator=(Status&&) noexcept = default;

  bool ok() const { return !failure_; }
  // Only when !ok().
  ErrorCode code() const { return failure_->code; }
  const std::string& message() const { return failure_->message; }

  // `context` and ": " in front of a failure's message (where it happened,
  // added on the way out); an ok status stays ok.
  Status&& within(std::string_view context) && {
    if (failure_) failure_->message.insert(0, std::string(context) + ": ");
    return std::move(*this);
  }

#if defined(__cpp_exceptions)
  // Throws the failure as attendre::Error (same code and message).
  void or_throw() const {
    if (failure_) throw Error(failure_->code, failure_->message);
  }
#endif

 private:
  struct Failure {
    Failure(ErrorCode c, std::string m) : code(c), message(std::move(m)) {}
    ErrorCode code;
    std::string message;
  };
  std::unique_ptr<Failure> failure_;  // null when ok: a success costs one pointer
};

// A T, or the failed Status saying why there is none.
template <class T>
class [[nodiscard]] Result {
  static_assert(!std::is_same_v<std::remove_cv_t<T>, Status>, "Result<Status>: return a Status");

 public:
  // A value, or anything a T is made from, converts (as with std::optional).
  template <class U = T>
    requires(std::is_constructible_v<T, U &&> && !std::is_same_v<std::remove_cvref_t<U>, Status> &&
             !std::is_same_v<std::remove_cvref_t<U>, Result>)
  Result(U&& value) : value_(std::in_place, std::forward<U>(value)) {}  // NOLINT
  Result(Status failure) : status_(std::move(failure)) { assert(!status_.ok() && "a Result needs a value or a failure"); }

  bool ok() const { return status_.ok(); }
  const Status& status() const& { return status_; }
  Status status() && { return std::move(status_); }

  // Only when ok().
  T& value() & { return *value_; }
  const T& value() const& { return *value_; }
  T&& value() && { return std::move(*value_); }
  T* operator->() { return &*value_; }
  const T* operator->() const { return &*value_; }
  T& operator*() & { return *value_; }
  const T& operator*() const& { return *value_; }

#if defined(__cpp_exceptions)
  // The value, or the failure thrown as attendre::Error.
  T value_or_throw() && {
    status_.or_throw();
    return std::move(*value_);
  }
#endif

 private:
  Status status_;
  std::optional<T> value_;
};

// A failed Status of each kind, the message naming the problem.
inline Status invalid_argument(std::string message) { return {ErrorCode::invalid_argument, std::move(message)}; }
inline Status malformed_input(std::string message) { return {ErrorCode::malformed_input, std::move(message)}; }

}  // namespace attendre
