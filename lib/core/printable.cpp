#include "core/printable.hpp"

#include <cstdint>

namespace attendre {
namespace {

uint8_t byte_at(std::string_view text, size_t i) { return static_cast<uint8_t>(text[i]); }

bool in(uint8_t byte, uint8_t low, uint8_t high) { return byte >= low && byte <= high; }

// Bytes of the well-formed UTF-8 sequence at text[i] (Unicode's table 3-7:
// no overlong forms, no surrogates, nothing past U+10FFFF), or 0 when the
// byte there starts none.
size_t sequence_at(std::string_view text, size_t i) {
  const uint8_t lead = byte_at(text, i);
  if (lead < 0x80) return 1;
  const auto continues = [&](size_t k, uint8_t low = 0x80, uint8_t high = 0xBF) {
    return i + k < text.size() && in(byte_at(text, i + k), low, high);
  };
  if (in(lead, 0xC2, 0xDF)) return continues(1) ? 2 : 0;
  if (in(lead, 0xE0, 0xEF)) {
    const uint8_t low = lead == 0xE0 ? 0xA0 : 0x80, high = lead == 0xED ? 0x9F : 0xBF;
    return continues(1, low, high) && continues(2) ? 3 : 0;
  }
  if (in(lead, 0xF0, 0xF4)) {
    const uint8_t low = lead == 0xF0 ? 0x90 : 0x80, high = lead == 0xF4 ? 0x8F : 0xBF;
    return continues(1, low, high) && continues(2) && continues(3) ? 4 : 0;
  }
  return 0;
}

uint32_t code_point(std::string_view sequence) {
  if (sequence.size() == 1) return byte_at(sequence, 0);
  uint32_t value = byte_at(sequence, 0) & (0x7Fu >> sequence.size());
  for (size_t k = 1; k < sequence.size(); ++k) value = (value << 6) | (byte_at(sequence, k) & 0x3Fu);
  return value;
}

// Characters that end a line (in a terminal or a log viewer), ring, erase,
// or reorder what follows them.
bool is_control(uint32_t c) {
  return c < 0x20 || (c >= 0x7F && c <= 0x9F) || c == 0x2028 || c == 0x2029 || (c >= 0x202A && c <= 0x202E) ||
         (c >= 0x2066 && c <= 0x2069);
}

void append_escaped_bytes(std::string& out, std::string_view bytes) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  for (size_t k = 0; k < bytes.size(); ++k) {
    const uint8_t byte = byte_at(bytes, k);
    out += {'\\', 'x', kHex[byte >> 4], kHex[byte & 0xF]};
  }
}

// printable's loop, with `quote` (when not NUL) escaped too.
std::string escape(std::string_view text, size_t limit, char quote) {
  std::string out;
  size_t i = 0;
  while (i < text.size()) {
    const size_t length = sequence_at(text, i);
    const std::string_view piece = text.substr(i, length ? length : 1);
    if (i + piece.size() > limit) break;
    if (!length || is_control(code_point(piece)))
      append_escaped_bytes(out, piece);
    else if (piece[0] == '\\' || (quote && piece[0] == quote))
      out += {'\\', piece[0]};
    else
      out += piece;
    i += piece.size();
  }
  if (i < text.size()) out += "...";
  return out;
}

}  // namespace

std::string printable(std::string_view text, size_t limit) { return escape(text, limit, '\0'); }

std::string quote(std::string_view text, size_t limit) { return '"' + escape(text, limit, '"') + '"'; }

}  // namespace attendre
