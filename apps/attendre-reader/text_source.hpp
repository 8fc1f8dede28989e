// The document's context as a stream of UTF-8 pieces, never held whole: a
// file read from disk block by block, or a string already in memory (a
// generated haystack). Every byte is checked as UTF-8 on its way through,
// so invalid input is reported with its byte offset by the first pass over
// it, before any device work starts.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>

namespace reader {

class TextSource {
 public:
  virtual ~TextSource() = default;
  // Starts over at the first byte.
  virtual void rewind() = 0;
  // The next piece, cut on a character boundary; empty at the end. Valid
  // until the next call. Throws malformed_input naming the source and the
  // byte offset of the first byte that is not UTF-8.
  virtual std::string_view next() = 0;
  // "notes.txt" or "the generated haystack", for messages.
  virtual const std::string& name() const = 0;
  virtual uint64_t size() const = 0;
};

// Opens `path` for streaming. Throws io_error naming the path when it is
// missing, a folder or unreadable.
std::unique_ptr<TextSource> open_text_file(const std::filesystem::path& path);

std::unique_ptr<TextSource> text_in_memory(std::string text, std::string name);

// The length of the longest prefix of `bytes` made of whole, valid UTF-8
// characters (RFC 3629: no overlong forms, no surrogates, at most U+10FFFF),
// and whether the rest is only the start of a character cut short.
struct Utf8Prefix {
  size_t valid = 0;
  bool truncated = false;  // bytes[valid..] is an incomplete but so far valid character
};
Utf8Prefix utf8_prefix(std::string_view bytes);

}  // namespace reader
