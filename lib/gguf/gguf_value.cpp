// GGUF metadata values: the extent walk run when a file is opened, and the
// lazy decoding behind gguf::Value.
//
// A value's payload follows its uint32 type id: scalars little-endian (bool
// one byte, 0 or 1), a string as a uint64 length and its bytes, an array as a
// uint32 element type, a uint64 count and the elements' payloads back to back
// (no type id per element; arrays may hold arrays, each with its own element
// type and count).
#include "gguf/gguf_value_impl.hpp"

#include "core/printable.hpp"

#include <limits>

namespace attendre::gguf {

using detail::ValueImpl;
namespace detail {
namespace {

constexpr uint64_t kArrayHeader = 4 + 8;  // element type, count

// The fewest bytes an element of `type` can take, to bound a count before
// walking it: a string is at least its length, an array its header.
uint64_t min_element_size(ValueType type) {
  if (type == ValueType::string) return 8;
  if (type == ValueType::array) return kArrayHeader;
  return scalar_size(type);
}

std::string plural(ValueType type) {
  if (type == ValueType::string) return "strings";
  if (type == ValueType::array) return "arrays";
  return to_string(type) + " values";
}

Status check_bool(std::byte value) {
  if (static_cast<uint8_t>(value) > 1)
    return malformed("bool byte " + std::to_string(static_cast<uint8_t>(value)) + " is neither 0 nor 1");
  return {};
}

}  // namespace

uint64_t scalar_size(ValueType type) {
  switch (type) {
    case ValueType::u8: case ValueType::i8: case ValueType::boolean: return 1;
    case ValueType::u16: case ValueType::i16: return 2;
    case ValueType::u32: case ValueType::i32: case ValueType::f32: return 4;
    case ValueType::u64: case ValueType::i64: case ValueType::f64: return 8;
    case ValueType::string: case ValueType::array: return 0;
  }
  return 0;
}

bool is_known(ValueType type) { return scalar_size(type) != 0 || type == ValueType::string || type == ValueType::array; }

Result<uint64_t> measure_value(std::span<const std::byte> bytes, ValueType type, uint64_t offset, uint32_t depth) {
  Cursor cursor(bytes, offset);
  if (const uint64_t size = scalar_size(type)) {
    ATTENDRE_TRY(cursor.need(size));
    if (type == ValueType::boolean) ATTENDRE_TRY(check_bool(bytes[offset]));
    return size;
  }
  if (type == ValueType::string) {
    ATTENDRE_TRY(cursor.read_string());
    return cursor.offset() - offset;
  }
  if (type != ValueType::array) return malformed("unknown value type " + std::to_string(static_cast<uint32_t>(type)));
  if (depth >= kMaxArrayNesting)
    return malformed("arrays nested more than " + std::to_string(kMaxArrayNesting) + " levels deep");
  ATTENDRE_TRY_ASSIGN(const auto element_id, cursor.read<uint32_t>());
  ATTENDRE_TRY_ASSIGN(const auto count, cursor.read<uint64_t>());
  const auto element = static_cast<ValueType>(element_id);
  if (!is_known(element))
    return malformed("array of unknown value type " + std::to_string(static_cast<uint32_t>(element)));
  // Every element takes at least min_element_size bytes, so a count that the
  // rest of the file cannot hold is refused before any walk or allocation.
  if (count > cursor.left() / min_element_size(element))
    return malformed("array of " + std::to_string(count) + " " + plural(element) + " exceeds the " +
                     std::to_string(cursor.left()) + " bytes left in the file");
  if (const uint64_t size = scalar_size(element)) {
    if (element == ValueType::boolean)
      for (uint64_t i = 0; i < count; ++i)
        ATTENDRE_TRY(within(check_bool(bytes[cursor.offset() + i]), [&] { return "element " + std::to_string(i); }));
    return kArrayHeader + count * size;
  }
  for (uint64_t i = 0; i < count; ++i) {
    ATTENDRE_TRY_ASSIGN(const uint64_t size, within(measure_value(bytes, element, cursor.offset(), depth + 1),
                                                    [&] { return "element " + std::to_string(i); }));
    ATTENDRE_TRY(cursor.skip(size));
  }
  return cursor.offset() - offset;
}

Value ValueAccess::make(std::shared_ptr<const Source> source, std::string name, ValueType type, uint64_t offset,
                        uint32_t depth) {
  auto impl = std::make_shared<ValueImpl>();
  if (type == ValueType::array) {
    impl->element_type = static_cast<ValueType>(load<uint32_t>(source->bytes(), offset));
    impl->count = load<uint64_t>(source->bytes(), offset + 4);
    impl->first = offset + kArrayHeader;
  }
  impl->source = std::move(source);
  impl->name = std::move(name);
  impl->type = type;
  impl->offset = offset;
  impl->depth = depth;
  Value value;
  value.impl_ = std::move(impl);
  return value;
}

}  // namespace detail

namespace {

using detail::load;

Status value_error(const ValueImpl& impl, std::string_view key, const std::string& problem,
                   ErrorCode code = ErrorCode::malformed_input) {
  const std::string_view name = key.empty() ? std::string_view(impl.name) : key;
  return {code, impl.source->name() + ": metadata key " + quote(name) + ": " + problem};
}

// Any integer value, widened: a negative one in `signed_value`, any other in `magnitude`.
struct Integer {
  bool negative = false;
  int64_t signed_value = 0;  // when negative
  uint64_t magnitude = 0;    // when not
};

std::optional<Integer> integer(const ValueImpl& impl) {
  const auto bytes = impl.source->bytes();
  const auto from_signed = [](int64_t v) {
    return Integer{v < 0, v, v < 0 ? 0 : static_cast<uint64_t>(v)};
  };
  const auto from_unsigned = [](uint64_t v) { return Integer{false, 0, v}; };
  switch (impl.type) {
    case ValueType::u8: return from_unsigned(load<uint8_t>(bytes, impl.offset));
    case ValueType::u16: return from_unsigned(load<uint16_t>(bytes, impl.offset));
    case ValueType::u32: return from_unsigned(load<uint32_t>(bytes, impl.offset));
    case ValueType::u64: return from_unsigned(load<uint64_t>(bytes, impl.offset));
    case ValueType::i8: return from_signed(load<int8_t>(bytes, impl.offset));
    case ValueType::i16: return from_signed(load<int16_t>(bytes, impl.offset));
    case ValueType::i32: return from_signed(load<int32_t>(bytes, impl.offset));
    case ValueType::i64: return from_signed(load<int64_t>(bytes, impl.offset));
    default: return std::nullopt;
  }
}

Status require_array(const ValueImpl& impl) {
  if (impl.type != ValueType::array) return value_error(impl, {}, "has type " + to_string(impl.type) + ", not an array");
  return {};
}

}  // namespace

Result<const ValueImpl*> Value::impl() const {
  if (!impl_) return invalid_argument("gguf: use of an empty Value");
  return impl_.get();
}

Result<ValueType> Value::type() const {
  ATTENDRE_TRY_ASSIGN(const ValueImpl* self, impl());
  return self->type;
}

Result<uint64_t> Value::as_u64(std::string_view key) const {
  ATTENDRE_TRY_ASSIGN(const ValueImpl* checked, impl());
  const ValueImpl& self = *checked;
  const auto value = integer(self);
  if (!value) return value_error(self, key, "has type " + to_string(self.type) + ", expected an unsigned integer");
  if (value->negative)
    return value_error(self, key, "value " + std::to_string(value->signed_value) + " does not fit an unsigned integer");
  return value->magnitude;
}

Result<int64_t> Value::as_i64(std::string_view key) const {
  ATTENDRE_TRY_ASSIGN(const ValueImpl* checked, impl());
  const ValueImpl& self = *checked;
  const auto value = integer(self);
  if (!value) return value_error(self, key, "has type " + to_string(self.type) + ", expected an integer");
  if (value->negative) return value->signed_value;
  if (value->magnitude > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
    return value_error(self, key, "value " + std::to_string(value->magnitude) + " does not fit int64");
  return static_cast<int64_t>(value->magnitude);
}

Result<double> Value::as_f64(std::string_view key) const {
  ATTENDRE_TRY_ASSIGN(const ValueImpl* checked, impl());
  const ValueImpl& self = *checked;
  if (self.type == ValueType::f32) return load<float>(self.source->bytes(), self.offset);
  if (self.type == ValueType::f64) return load<double>(self.source->bytes(), self.offset);
  const auto value = integer(self);
  if (!value) return value_error(self, key, "has type " + to_string(self.type) + ", expected a number");
  // A double holds every integer up to 2^53 exactly; beyond, the conversion would round.
  constexpr uint64_t kExact = uint64_t{1} << 53;
  if (value->negative ? value->signed_value < -static_cast<int64_t>(kExact) : value->magnitude > kExact)
    return value_error(self, key,
                       "integer " + (value->negative ? std::to_string(value->signed_value) : std::to_string(value->magnitude)) +
                           " is not exactly representable as a double");
  return value->negative ? static_cast<double>(value->signed_value) : static_cast<double>(value->magnitude);
}

Result<bool> Value::as_bool(std::string_view key) const {
  ATTENDRE_TRY_ASSIGN(const ValueImpl* checked, impl());
  const ValueImpl& self = *checked;
  if (self.type != ValueType::boolean)
    return value_error(self, key, "has type " + to_string(self.type) + ", expected bool");
  return load<uint8_t>(self.source->bytes(), self.offset) != 0;
}

Result<std::string_view> Value::as_string(std::string_view key) const {
  ATTENDRE_TRY_ASSIGN(const ValueImpl* checked, impl());
  const ValueImpl& self = *checked;
  if (self.type != ValueType::string)
    return value_error(self, key, "has type " + to_string(self.type) + ", expected string");
  return detail::Cursor(self.source->bytes(), self.offset).read_checked_string();
}

Result<ValueType> Value::element_type() const {
  ATTENDRE_TRY_ASSIGN(const ValueImpl* self, impl());
  ATTENDRE_TRY(require_array(*self));
  return self->element_type;
}

Result<uint64_t> Value::size() const {
  ATTENDRE_TRY_ASSIGN(const ValueImpl* self, impl());
  ATTENDRE_TRY(require_array(*self));
  return self->count;
}

Result<Value> Value::at(uint64_t index) const {
  ATTENDRE_TRY_ASSIGN(const ValueImpl* checked, impl());
  const ValueImpl& self = *checked;
  ATTENDRE_TRY(require_array(self));
  if (index >= self.count)
    return value_error(self, {}, "index " + std::to_string(index) + " is out of range (" + std::to_string(self.count) +
                              " elements)", ErrorCode::invalid_argument);
  const auto bytes = self.source->bytes();
  uint64_t offset = 0;
  if (const uint64_t size = detail::scalar_size(self.element_type)) {
    offset = self.first + index * size;
  } else {
    std::call_once(self.indexed, [&] {
      self.element_offsets.resize(self.count);
      uint64_t next = self.first;
      for (uint64_t i = 0; i < self.count; ++i) {
        self.element_offsets[i] = next;
        // Checked at open, so the walk cannot fail here.
        next += detail::measure_value(bytes, self.element_type, next, self.depth + 1).value();
      }
    });
    offset = self.element_offsets[index];
  }
  return detail::ValueAccess::make(self.source, self.name + "[" + std::to_string(index) + "]", self.element_type,
                                   offset, self.depth + 1);
}

}  // namespace attendre::gguf
