#include "text_source.hpp"

#include "core/fail.hpp"

#include <attendre/error.hpp>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <system_error>
#include <vector>

namespace reader {
namespace {

using attendre::ErrorCode;
using attendre::fail;

[[noreturn]] void invalid_utf8(const std::string& name, uint64_t offset) {
  fail(ErrorCode::malformed_input, name + ": invalid UTF-8 at byte " + std::to_string(offset));
}

// Length of the character starting with `lead`, 0 when no character starts so.
size_t sequence_length(unsigned char lead) {
  if (lead < 0x80) return 1;
  if (lead >= 0xC2 && lead <= 0xDF) return 2;
  if (lead >= 0xE0 && lead <= 0xEF) return 3;
  if (lead >= 0xF0 && lead <= 0xF4) return 4;
  return 0;  // continuation bytes, C0/C1 (overlong) and F5..FF
}

// Whether `byte` may follow `lead` as the second byte: the ranges that rule
// out overlong forms (E0, F0), surrogates (ED) and code points past U+10FFFF (F4).
bool valid_second(unsigned char lead, unsigned char byte) {
  switch (lead) {
    case 0xE0: return byte >= 0xA0 && byte <= 0xBF;
    case 0xED: return byte >= 0x80 && byte <= 0x9F;
    case 0xF0: return byte >= 0x90 && byte <= 0xBF;
    case 0xF4: return byte >= 0x80 && byte <= 0x8F;
    default: return byte >= 0x80 && byte <= 0xBF;
  }
}

class FileText final : public TextSource {
 public:
  explicit FileText(const std::filesystem::path& path) : name_(path.string()) {
    std::error_code ec;
    if (std::filesystem::is_directory(path, ec)) fail(ErrorCode::io_error, "cannot read " + name_ + ": it is a folder");
    file_ = std::fopen(path.c_str(), "rb");
    if (!file_) fail(ErrorCode::io_error, "cannot open " + name_ + ": " + std::strerror(errno));
    size_ = std::filesystem::file_size(path, ec);
    if (ec) size_ = 0;
    buffer_.resize(kBlock + kMaxCarry);
  }
  ~FileText() override { std::fclose(file_); }
  FileText(const FileText&) = delete;
  FileText& operator=(const FileText&) = delete;

  void rewind() override {
    std::rewind(file_);
    tail_.clear();
    offset_ = 0;
  }

  std::string_view next() override {
    for (;;) {
      // The bytes of a character the previous block cut come first.
      std::memcpy(buffer_.data(), tail_.data(), tail_.size());
      const size_t carried = tail_.size();
      const size_t got = std::fread(buffer_.data() + carried, 1, kBlock, file_);
      if (got < kBlock && std::ferror(file_))
        fail(ErrorCode::io_error, "cannot read " + name_ + ": " + std::strerror(errno));
      const std::string_view bytes(buffer_.data(), carried + got);
      const Utf8Prefix prefix = utf8_prefix(bytes);
      if (prefix.valid < bytes.size() && (!prefix.truncated || got == 0)) invalid_utf8(name_, offset_ + prefix.valid);
      tail_.assign(bytes.substr(prefix.valid));
      offset_ += prefix.valid;
      if (prefix.valid > 0 || got == 0) return bytes.substr(0, prefix.valid);
    }
  }

  const std::string& name() const override { return name_; }
  uint64_t size() const override { return size_; }

 private:
  static constexpr size_t kBlock = size_t{1} << 16;
  static constexpr size_t kMaxCarry = 3;  // an incomplete character has at most 3 bytes

  std::string name_;
  std::FILE* file_ = nullptr;
  uint64_t size_ = 0;
  std::vector<char> buffer_;
  std::string tail_;     // the incomplete character the last block ended with
  uint64_t offset_ = 0;  // bytes handed out so far
};

class MemoryText final : public TextSource {
 public:
  MemoryText(std::string text, std::string name) : text_(std::move(text)), name_(std::move(name)) {
    const Utf8Prefix prefix = utf8_prefix(text_);
    if (prefix.valid < text_.size()) invalid_utf8(name_, prefix.valid);
  }
  void rewind() override { done_ = false; }
  std::string_view next() override {
    if (done_) return {};
    done_ = true;
    return text_;
  }
  const std::string& name() const override { return name_; }
  uint64_t size() const override { return text_.size(); }

 private:
  std::string text_, name_;
  bool done_ = false;
};

}  // namespace

Utf8Prefix utf8_prefix(std::string_view bytes) {
  size_t i = 0;
  while (i < bytes.size()) {
    const auto lead = static_cast<unsigned char>(bytes[i]);
    if (lead < 0x80) {  // the common case, byte by byte
      ++i;
      continue;
    }
    const size_t length = sequence_length(lead);
    if (length == 0) return {i, false};
    for (size_t k = 1; k < length; ++k) {
      if (i + k == bytes.size()) return {i, true};
      const auto byte = static_cast<unsigned char>(bytes[i + k]);
      const bool ok = k == 1 ? valid_second(lead, byte) : byte >= 0x80 && byte <= 0xBF;
      if (!ok) return {i, false};
    }
    i += length;
  }
  return {i, false};
}

std::unique_ptr<TextSource> open_text_file(const std::filesystem::path& path) {
  return std::make_unique<FileText>(path);
}

std::unique_ptr<TextSource> text_in_memory(std::string text, std::string name) {
  return std::make_unique<MemoryText>(std::move(text), std::move(name));
}

}  // namespace reader
