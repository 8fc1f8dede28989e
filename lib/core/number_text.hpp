// Numbers in messages that echo a value back: the shortest text that reads
// back as the same double ("1e+308", "1.0000000000000002", "0.5"), so that a
// refused value never looks like an accepted one ("got 1.000000" for a
// top-p just above 1) nor floods the line (309 digits of "%f").
#pragma once

#include <attendre/status.hpp>

#include <charconv>
#include <cstdint>
#include <string>
#include <string_view>
#include <system_error>
#include <type_traits>

namespace attendre {

// A count from text: digits only, at most 2^32 - 1, and > 0 when `positive`.
// invalid_argument "<what>: expected a positive integer, got 'x'" (or
// "... is too large (at most 4294967295)") otherwise. The tools' flags and
// the memory fields (memory_text.hpp) read counts with it.
Result<uint32_t> parse_count_text(std::string_view what, std::string_view text, bool positive);
// A finite number from text, >= 0 when `non_negative`: invalid_argument
// "<what>: expected a finite number [>= 0], got 'x'" otherwise.
Result<double> parse_number_text(std::string_view what, std::string_view text, bool non_negative);

// A float is printed as the shortest text that reads back as that float
// ("1e-05" for a float epsilon, not the 17 digits of its double).
template <class Float>
std::string shortest_text(Float value) {
  static_assert(std::is_floating_point_v<Float>);
  char text[32];  // the longest shortest form, "-2.2250738585072014e-308", has 24
  const auto [end, ec] = std::to_chars(text, text + sizeof text, value);
  return ec == std::errc{} ? std::string(text, end) : std::string("?");
}

}  // namespace attendre
