// Text from outside (a GGUF key or string, a tensor name, a .npy header)
// made safe to quote in a one-line message. One function for every message,
// so that each shows such text the same way and none can be broken by it.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace attendre {

// `text` with valid UTF-8 kept and everything that could cut, break or
// reorder the line escaped: a backslash as \\, and each byte of a control
// character (C0, DEL, C1, the line and paragraph separators U+2028/U+2029,
// the bidirectional overrides and isolates) and of invalid UTF-8 as \xNN
// (upper-case hex). A NUL becomes \x00, so a message holding it survives a
// C string whole. At most `limit` bytes of `text` are shown (never half a
// character), then "...".
std::string printable(std::string_view text, size_t limit = 80);

// printable(text, limit) between double quotes, a double quote inside
// escaped as \".
std::string quote(std::string_view text, size_t limit = 80);

}  // namespace attendre
