// UTF-8 and the two character mappings tokenizers put between text and
// tokens: SentencePiece's space escaping (' ' <-> U+2581) and GPT-2's
// byte-level alphabet (each byte <-> one printable code point).
#pragma once

#include "core/printable.hpp"

#include <attendre/status.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace attendre::tokenizer::unicode {

// U+2581 LOWER ONE EIGHTH BLOCK, SentencePiece's visible space.
inline constexpr std::string_view kEscapedSpace = "\xE2\x96\x81";

// Byte offset of the first byte that does not start a well-formed UTF-8
// sequence (overlong forms, surrogates and code points past U+10FFFF are
// ill-formed), or nullopt when all of `text` is valid.
std::optional<size_t> first_invalid_utf8(std::string_view text);

// Fails invalid_argument "<what>: invalid UTF-8 at byte offset N" unless
// `text` is valid UTF-8.
Status check_utf8(std::string_view text, std::string_view what);

// Length of the sequence a lead byte announces (1 for ASCII and for bytes
// that cannot lead), clamped by the caller to the bytes left. This is how
// llama.cpp steps through text it has not validated (a vocabulary's).
size_t sequence_length(char lead);

// Appends the UTF-8 encoding of `code_point` (<= U+10FFFF).
void append_utf8(std::string& out, uint32_t code_point);

// Decodes the sequence at text[pos], which must be valid, and advances pos.
uint32_t next_code_point(std::string_view text, size_t& pos);

// ' ' -> U+2581 and back.
std::string escape_spaces(std::string_view text);
std::string unescape_spaces(std::string_view text);

// GPT-2's byte-level alphabet: printable bytes map to themselves, the other
// 68 to U+0100.. in byte order, so every byte string becomes printable text.
const std::array<std::string, 256>& byte_level_alphabet();  // UTF-8 of each byte's character
std::optional<uint8_t> byte_level_byte(uint32_t code_point);  // the inverse
// Maps a byte-level token text back to bytes; characters outside the
// alphabet (added tokens typed normal) are kept as their UTF-8.
std::string byte_level_decode(std::string_view token_text);

// The text for messages, escaped as every message escapes text from a file
// (core/printable.hpp), cut after `limit` bytes.
inline std::string printable(std::string_view text, size_t limit = 40) { return attendre::printable(text, limit); }

}  // namespace attendre::tokenizer::unicode
