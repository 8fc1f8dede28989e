#include "core/printable.hpp"

#include "core/utf8.hpp"

#include <cstdint>

namespace attendre {
namespace {

uint8_t byte_at(std::string_view text, size_t i) { return static_cast<uint8_t>(text[i]); }

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
    const size_t length = utf8::sequence_at(text, i);
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
