// What a gguf::Value points at, and the walk that checks a value's extent
// (internal to the reader). The walk runs once over every metadata value when
// the file is opened, so that later lazy decoding only reads checked bytes.
#pragma once

#include "gguf/gguf.hpp"
#include "gguf/gguf_source.hpp"

#include <mutex>

namespace attendre::gguf::detail {

struct ValueImpl {
  std::shared_ptr<const detail::Source> source;
  std::string name;  // the key, or key[i][j] for array elements, for messages
  ValueType type = ValueType::u8;
  uint64_t offset = 0;  // of the payload (after the type id) in the file
  // Arrays only: element type, element count and the offset of element 0.
  ValueType element_type = ValueType::u8;
  uint64_t count = 0;
  uint64_t first = 0;
  uint32_t depth = 0;  // arrays above this one
  // Offsets of the elements of an array of strings or arrays, built on the
  // first at(): such elements differ in size, so element i is found by
  // walking the i before it, which the index does once.
  mutable std::once_flag indexed;
  mutable std::vector<uint64_t> element_offsets;
};

// Bytes of a scalar of `type`, or 0 for strings, arrays and unknown ids.
uint64_t scalar_size(ValueType type);
bool is_known(ValueType type);

// Bytes taken by the payload of a value of `type` at `offset` (after its type
// id), every length and count checked against the end of `bytes` and every
// nested array against kMaxArrayNesting (`depth`: arrays around this value).
// Fails malformed_input with the problem alone; the caller adds the field.
Result<uint64_t> measure_value(std::span<const std::byte> bytes, ValueType type, uint64_t offset, uint32_t depth);

struct ValueAccess {
  // The Value of `type` at `offset`, already checked by measure_value: read unchecked.
  static Value make(std::shared_ptr<const Source> source, std::string name, ValueType type, uint64_t offset,
                    uint32_t depth);
  // Only on a Value the reader made (never empty).
  static const ValueImpl& impl(const Value& value) { return *value.impl_; }
};

}  // namespace attendre::gguf::detail
