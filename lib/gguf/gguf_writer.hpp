// Writer of GGUF files (version 3 by default, 2 on request; the two are the
// same little-endian layout under another version number): metadata of every
// value type, nested arrays included, and tensors of any type from their raw
// bytes, laid out as readers require: back to back in the order added, each
// padded to the alignment. The file is written to a temporary name beside the
// target and renamed into place, so a reader never sees half a file.
//
// The writer serves tests and fixture generators, so besides valid files it
// writes malformed ones on request: with `checks` off it writes whatever it is
// given (any version number, duplicate keys and names, unknown type ids,
// explicit offsets that overlap, leave gaps or are misaligned, data of the
// wrong size), and MetadataValue::raw writes any type id with any payload.
#pragma once

#include "gguf/gguf.hpp"

#include <concepts>
#include <cstring>

namespace attendre::gguf {

// Little-endian encoding of GGUF's primitives into a growing buffer.
class Encoder {
 public:
  template <class T>
    requires std::integral<T> || std::floating_point<T>
  Encoder& scalar(T value) {
    const size_t at = buffer_.size();
    buffer_.resize(at + sizeof(T));
    std::memcpy(buffer_.data() + at, &value, sizeof(T));
    return *this;
  }
  Encoder& u32(uint32_t value) { return scalar(value); }
  Encoder& u64(uint64_t value) { return scalar(value); }
  Encoder& string(std::string_view text);  // uint64 length, then the bytes
  Encoder& bytes(std::span<const std::byte> data);
  Encoder& zeros(uint64_t count);

  uint64_t size() const { return buffer_.size(); }
  const std::vector<std::byte>& buffer() const { return buffer_; }
  std::vector<std::byte> take() { return std::move(buffer_); }

 private:
  std::vector<std::byte> buffer_;
};

// A metadata value to write: its type id and its encoded payload. Arrays
// encode their elements as they are built, so they nest to any depth.
class MetadataValue {
 public:
  static MetadataValue u8(uint8_t value);
  static MetadataValue i8(int8_t value);
  static MetadataValue u16(uint16_t value);
  static MetadataValue i16(int16_t value);
  static MetadataValue u32(uint32_t value);
  static MetadataValue i32(int32_t value);
  static MetadataValue f32(float value);
  static MetadataValue boolean(bool value);
  static MetadataValue string(std::string_view value);
  static MetadataValue u64(uint64_t value);
  static MetadataValue i64(int64_t value);
  static MetadataValue f64(double value);
  // An array of `elements`, each of `element_type` (invalid_argument otherwise).
  static Result<MetadataValue> array(ValueType element_type, std::span<const MetadataValue> elements);
  // Shorthands for the arrays of vocabularies.
  static MetadataValue strings(std::span<const std::string> values);
  static MetadataValue f32s(std::span<const float> values);
  static MetadataValue i32s(std::span<const int32_t> values);
  // Type id `type_id` and `payload` written verbatim, for malformed files.
  static MetadataValue raw(uint32_t type_id, std::vector<std::byte> payload);

  uint32_t type_id() const { return type_id_; }
  std::span<const std::byte> payload() const { return payload_; }

 private:
  MetadataValue(ValueType type, std::vector<std::byte> payload)
      : type_id_(static_cast<uint32_t>(type)), payload_(std::move(payload)) {}
  uint32_t type_id_ = 0;
  std::vector<std::byte> payload_;
};

// `value` (read from a file) as a value to write, arrays at any depth;
// `key` names it in a failure.
Result<MetadataValue> copy_value(const Value& value, std::string_view key);

struct TensorToWrite {
  std::string name;
  std::vector<uint64_t> dims;  // ggml order: dims[0] is the contiguous one
  TensorType type = TensorType::f32;
  std::vector<std::byte> data;
  // From the start of the data section; by default the next multiple of the
  // alignment after the tensor before. With checks on it must be that one
  // (the layout readers require leaves no choice).
  std::optional<uint64_t> offset;
};

struct WriterOptions {
  uint32_t version = 3;  // 2 or 3 (any number with checks off)
  // A nonzero power of two (with checks on). When it is not 32 and no
  // general.alignment key was added, the writer adds one (uint32), as readers
  // find it there.
  uint64_t alignment = kDefaultAlignment;
  bool checks = true;
};

// Each fallible call returns a Status or a Result.
class Writer {
 public:
  // invalid_argument for options it cannot write (see WriterOptions).
  static Result<Writer> create(WriterOptions options = {});

  // Metadata in the order added. With checks on, a duplicate key or a
  // general.alignment that disagrees with the options is invalid_argument.
  Status add(std::string key, MetadataValue value);
  // With checks on: a unique name, at most kMaxDims nonzero dims, a known
  // type whose block divides dims[0], exactly the bytes that shape takes, and
  // no offset but the one the layout gives it.
  Status add_tensor(TensorToWrite tensor);
  Status add_tensor(std::string name, std::vector<uint64_t> dims, TensorType type, std::span<const std::byte> data) {
    return add_tensor(TensorToWrite{std::move(name), std::move(dims), type, {data.begin(), data.end()}, std::nullopt});
  }

  // The whole file in memory.
  Result<std::vector<std::byte>> bytes() const;
  // Writes bytes() to `path` atomically (temporary file, fsync, rename); io_error on failure.
  Status write(const std::filesystem::path& path) const;

 private:
  struct Checked {};  // the options have passed create()'s checks
  Writer(WriterOptions options, Checked) : options_(options) {}

  WriterOptions options_;
  std::vector<std::pair<std::string, MetadataValue>> metadata_;
  std::vector<TensorToWrite> tensors_;
};

}  // namespace attendre::gguf
