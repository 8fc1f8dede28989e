// Well-formed UTF-8, decided in one place for the tokenizers' checks and the
// messages' escaping (core/printable).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace attendre::utf8 {

// Length of the well-formed sequence at text[pos], 0 when ill-formed.
// Follows Unicode's table 3-7: the second byte's range depends on the lead
// byte, which rules out overlong forms, surrogates and values past U+10FFFF.
inline size_t sequence_at(std::string_view text, size_t pos) {
  const auto byte_at = [&](size_t i) { return static_cast<uint8_t>(text[i]); };
  const uint8_t lead = byte_at(pos);
  if (lead < 0x80) return 1;
  size_t length = 0;
  uint8_t second_min = 0x80, second_max = 0xBF;
  if (lead >= 0xC2 && lead <= 0xDF) {
    length = 2;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    length = 3;
    if (lead == 0xE0) second_min = 0xA0;  // overlong below U+0800
    if (lead == 0xED) second_max = 0x9F;  // surrogates U+D800..DFFF
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    length = 4;
    if (lead == 0xF0) second_min = 0x90;  // overlong below U+10000
    if (lead == 0xF4) second_max = 0x8F;  // past U+10FFFF
  } else {
    return 0;
  }
  if (pos + length > text.size()) return 0;
  const uint8_t second = byte_at(pos + 1);
  if (second < second_min || second > second_max) return 0;
  for (size_t i = 2; i < length; ++i)
    if ((byte_at(pos + i) & 0xC0) != 0x80) return 0;
  return length;
}

}  // namespace attendre::utf8
