#include "text/tokenizer_unicode.hpp"

#include "core/utf8.hpp"

#include <attendre/error.hpp>

#include <algorithm>
#include <vector>

namespace attendre::tokenizer::unicode {
namespace {

uint8_t byte_at(std::string_view text, size_t pos) { return static_cast<uint8_t>(text[pos]); }

std::string replace_all(std::string_view text, std::string_view from, std::string_view to) {
  std::string out;
  out.reserve(text.size());
  size_t start = 0;
  for (size_t found = text.find(from); found != std::string_view::npos; found = text.find(from, start)) {
    out.append(text.substr(start, found - start));
    out.append(to);
    start = found + from.size();
  }
  out.append(text.substr(start));
  return out;
}

// The bytes GPT-2 keeps as themselves: '!'..'~', '¡'..'¬', '®'..'ÿ'.
bool is_kept_byte(uint32_t byte) {
  return (byte >= 0x21 && byte <= 0x7E) || (byte >= 0xA1 && byte <= 0xAC) || (byte >= 0xAE && byte <= 0xFF);
}

}  // namespace

std::optional<size_t> first_invalid_utf8(std::string_view text) {
  size_t pos = 0;
  while (pos < text.size()) {
    // ASCII runs are the common case; skip them without the table.
    if (byte_at(text, pos) < 0x80) {
      ++pos;
      continue;
    }
    const size_t length = utf8::sequence_at(text, pos);
    if (length == 0) return pos;
    pos += length;
  }
  return std::nullopt;
}

Status check_utf8(std::string_view text, std::string_view what) {
  if (const auto offset = first_invalid_utf8(text))
    return invalid_argument(std::string(what) + ": invalid UTF-8 at byte offset " + std::to_string(*offset));
  return {};
}

size_t sequence_length(char lead) {
  const uint8_t byte = static_cast<uint8_t>(lead);
  if (byte >= 0xF0) return 4;
  if (byte >= 0xE0) return 3;
  if (byte >= 0xC0) return 2;
  return 1;
}

void append_utf8(std::string& out, uint32_t code_point) {
  if (code_point < 0x80) {
    out += static_cast<char>(code_point);
  } else if (code_point < 0x800) {
    out += static_cast<char>(0xC0 | (code_point >> 6));
    out += static_cast<char>(0x80 | (code_point & 0x3F));
  } else if (code_point < 0x10000) {
    out += static_cast<char>(0xE0 | (code_point >> 12));
    out += static_cast<char>(0x80 | ((code_point >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (code_point & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (code_point >> 18));
    out += static_cast<char>(0x80 | ((code_point >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((code_point >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (code_point & 0x3F));
  }
}

uint32_t next_code_point(std::string_view text, size_t& pos) {
  const uint8_t lead = byte_at(text, pos);
  const size_t length = sequence_length(static_cast<char>(lead));
  static constexpr uint8_t kLeadMask[5] = {0, 0x7F, 0x1F, 0x0F, 0x07};
  uint32_t code_point = lead & kLeadMask[length];
  for (size_t i = 1; i < length && pos + i < text.size(); ++i)
    code_point = (code_point << 6) | (byte_at(text, pos + i) & 0x3Fu);
  pos += length;
  return code_point;
}

std::string escape_spaces(std::string_view text) { return replace_all(text, " ", kEscapedSpace); }

std::string unescape_spaces(std::string_view text) { return replace_all(text, kEscapedSpace, " "); }

const std::array<std::string, 256>& byte_level_alphabet() {
  static const std::array<std::string, 256> alphabet = [] {
    std::array<std::string, 256> table;
    uint32_t next_moved = 0x100;
    for (uint32_t byte = 0; byte < 256; ++byte)
      append_utf8(table[byte], is_kept_byte(byte) ? byte : next_moved++);
    return table;
  }();
  return alphabet;
}

std::optional<uint8_t> byte_level_byte(uint32_t code_point) {
  if (code_point < 0x100) {
    if (!is_kept_byte(code_point)) return std::nullopt;
    return static_cast<uint8_t>(code_point);
  }
  // The n-th moved byte (in byte order) became U+0100 + n.
  static const std::vector<uint8_t> moved = [] {
    std::vector<uint8_t> bytes;
    for (uint32_t byte = 0; byte < 256; ++byte)
      if (!is_kept_byte(byte)) bytes.push_back(static_cast<uint8_t>(byte));
    return bytes;
  }();
  if (code_point - 0x100 >= moved.size()) return std::nullopt;
  return moved[code_point - 0x100];
}

std::string byte_level_decode(std::string_view token_text) {
  std::string bytes;
  bytes.reserve(token_text.size());
  size_t pos = 0;
  while (pos < token_text.size()) {
    const size_t start = pos;
    const uint32_t code_point = next_code_point(token_text, pos);
    pos = std::min(pos, token_text.size());
    if (const auto byte = byte_level_byte(code_point))
      bytes += static_cast<char>(*byte);
    else
      bytes.append(token_text.substr(start, pos - start));
  }
  return bytes;
}

}  // namespace attendre::tokenizer::unicode
