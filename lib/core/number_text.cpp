#include "core/number_text.hpp"

#include <cmath>
#include <limits>

namespace attendre {
namespace {

Status invalid(std::string_view what, const char* expected, std::string_view text) {
  std::string message(what);
  message.append(": ").append(expected).append(", got '").append(text).append("'");
  return {ErrorCode::invalid_argument, std::move(message)};
}

}  // namespace

Result<uint32_t> parse_count_text(std::string_view what, std::string_view text, bool positive) {
  const char* expected = positive ? "expected a positive integer" : "expected a non-negative integer";
  uint64_t value = 0;
  // from_chars for an unsigned type already rejects a sign, so "-1" fails
  // here rather than wrapping around.
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || end != text.data() + text.size() || (ec != std::errc{} && ec != std::errc::result_out_of_range))
    return invalid(what, expected, text);
  if (ec == std::errc::result_out_of_range || value > std::numeric_limits<uint32_t>::max()) {
    std::string message(what);
    message.append(": ").append(text).append(" is too large (at most ");
    return Status{ErrorCode::invalid_argument,
                  message.append(std::to_string(std::numeric_limits<uint32_t>::max())).append(")")};
  }
  if (positive && value == 0) return invalid(what, expected, text);
  return static_cast<uint32_t>(value);
}

Result<double> parse_number_text(std::string_view what, std::string_view text, bool non_negative) {
  const char* expected = non_negative ? "expected a finite number >= 0" : "expected a finite number";
  double value = 0.0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || end != text.data() + text.size() || ec != std::errc{} || !std::isfinite(value) ||
      (non_negative && value < 0.0))
    return invalid(what, expected, text);
  return value;
}

}  // namespace attendre
