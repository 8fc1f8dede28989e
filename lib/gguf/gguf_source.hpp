// The bytes of one GGUF file and bounded reading over them (internal to the
// reader). A Source is either a read-only memory mapping it owns or a
// caller's buffer it borrows; a Cursor reads little-endian fields from it and
// refuses, with a message, to read past its end.
//
// Failures below the file level carry only the problem ("string of 9 bytes
// exceeds the 3 bytes left in the file"); `within` prefixes the field being
// parsed on the way out, so the message ends up naming the file, the field
// and the problem without building a context string on the good path.
#pragma once

#include "core/try.hpp"

#include <attendre/status.hpp>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <string_view>

namespace attendre::gguf::detail {

class Source {
 public:
  // Maps `path` read-only (io_error when it cannot be opened or mapped).
  static Result<std::shared_ptr<const Source>> map(const std::filesystem::path& path);
  // Borrows `bytes`, which must outlive the Source.
  static std::shared_ptr<const Source> borrow(std::span<const std::byte> bytes, const std::filesystem::path& name);

  Source(const Source&) = delete;
  Source& operator=(const Source&) = delete;
  ~Source();

  std::span<const std::byte> bytes() const { return bytes_; }
  uint64_t size() const { return bytes_.size(); }
  const std::filesystem::path& path() const { return path_; }
  const std::string& name() const { return name_; }  // the path as messages spell it

 private:
  Source(std::filesystem::path path, std::span<const std::byte> bytes, void* mapping);
  std::filesystem::path path_;
  std::string name_;
  std::span<const std::byte> bytes_;
  void* mapping_ = nullptr;  // owned when not null: munmap'ed by the destructor
};

inline Status malformed(std::string what) { return malformed_input(std::move(what)); }

// `outcome` (a Status or a Result), a failure with `context()` and ": " in
// front of its message (the code kept); `context` runs only on failure.
template <class Outcome, class Context>
Outcome within(Outcome&& outcome, Context&& context) {
  if (outcome.ok()) return std::move(outcome);
  return ::attendre::detail::take_status(std::move(outcome)).within(context());
}

// A little-endian scalar at `offset`, which the caller has bounds-checked.
template <class T>
T load(std::span<const std::byte> bytes, uint64_t offset) {
  T value;
  std::memcpy(&value, bytes.data() + offset, sizeof(T));
  return value;
}

class Cursor {
 public:
  Cursor(std::span<const std::byte> bytes, uint64_t offset) : bytes_(bytes), offset_(offset) {}

  uint64_t offset() const { return offset_; }
  uint64_t left() const { return bytes_.size() - offset_; }

  // Fails "needs N bytes at offset O, the file has L left" unless N bytes remain.
  Status need(uint64_t count) const {
    if (count > left())
      return malformed("needs " + std::to_string(count) + " bytes at offset " + std::to_string(offset_) +
                       ", the file has " + std::to_string(left()) + " left");
    return {};
  }
  Status skip(uint64_t count) {
    ATTENDRE_TRY(need(count));
    offset_ += count;
    return {};
  }
  template <class T>
  Result<T> read() {
    ATTENDRE_TRY(need(sizeof(T)));
    const T value = load<T>(bytes_, offset_);
    offset_ += sizeof(T);
    return value;
  }
  // A GGUF string: a uint64 length, then that many bytes (not terminated).
  Result<std::string_view> read_string() {
    ATTENDRE_TRY_ASSIGN(const uint64_t length, read<uint64_t>());
    if (length > left())
      return malformed("string of " + std::to_string(length) + " bytes exceeds the " + std::to_string(left()) +
                       " bytes left in the file");
    return take_string(length);
  }
  // A string already checked (by the walk at open): no bounds checks.
  std::string_view read_checked_string() {
    const auto length = load<uint64_t>(bytes_, offset_);
    offset_ += sizeof(uint64_t);
    return take_string(length);
  }

 private:
  std::string_view take_string(uint64_t length) {
    const std::string_view text(reinterpret_cast<const char*>(bytes_.data() + offset_), length);
    offset_ += length;
    return text;
  }
  std::span<const std::byte> bytes_;
  uint64_t offset_;
};

}  // namespace attendre::gguf::detail
