// Numbers in messages that echo a value back: the shortest text that reads
// back as the same double ("1e+308", "1.0000000000000002", "0.5"), so that a
// refused value never looks like an accepted one ("got 1.000000" for a
// top-p just above 1) nor floods the line (309 digits of "%f").
#pragma once

#include <charconv>
#include <string>
#include <system_error>
#include <type_traits>

namespace attendre {

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
