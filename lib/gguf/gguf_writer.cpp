// GGUF writing; see gguf_writer.hpp for the contract and gguf_file.cpp for
// the layout.
#include "gguf/gguf_writer.hpp"
#include "core/printable.hpp"
#include "core/try.hpp"

#include <algorithm>
#include <cerrno>
#include <fcntl.h>
#include <limits>
#include <system_error>
#include <unistd.h>

namespace attendre::gguf {
namespace {

Status invalid(const std::string& what) { return invalid_argument("gguf writer: " + what); }

uint64_t align_up(uint64_t offset, uint64_t alignment) {
  const uint64_t rest = offset % alignment;
  return rest ? offset + (alignment - rest) : offset;
}

Status check_tensor(const TensorToWrite& t) {
  const std::string who = "tensor " + quote(t.name) + ": ";
  if (t.name.empty()) return invalid("a tensor needs a name");
  if (t.dims.size() > kMaxDims) return invalid(who + std::to_string(t.dims.size()) + " dimensions, more than 4");
  uint64_t elements = 1;
  for (const uint64_t d : t.dims) {
    if (d == 0 || d > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) / elements)
      return invalid(who + "dimension " + std::to_string(d) + " is 0 or makes the element count overflow int64");
    elements *= d;
  }
  const auto block = block_size(t.type);
  if (!block) return invalid(who + "unknown type " + to_string(t.type));
  const uint64_t row = t.dims.empty() ? 1 : t.dims[0];
  if (row % block->elements != 0)
    return invalid(who + "row of " + std::to_string(row) + " is not a multiple of the " + to_string(t.type) + " block of " +
                   std::to_string(block->elements));
  const uint64_t expected = elements / block->elements * block->bytes;
  if (t.data.size() != expected)
    return invalid(who + std::to_string(t.data.size()) + " bytes of data, the shape takes " + std::to_string(expected));
  return {};
}

std::string errno_text() { return std::generic_category().message(errno); }

}  // namespace

Encoder& Encoder::string(std::string_view text) {
  u64(text.size());
  return bytes(std::as_bytes(std::span(text.data(), text.size())));
}

Encoder& Encoder::bytes(std::span<const std::byte> data) {
  buffer_.insert(buffer_.end(), data.begin(), data.end());
  return *this;
}

Encoder& Encoder::zeros(uint64_t count) {
  buffer_.resize(buffer_.size() + count, std::byte{0});
  return *this;
}

MetadataValue MetadataValue::u8(uint8_t value) { return {ValueType::u8, Encoder().scalar(value).take()}; }
MetadataValue MetadataValue::i8(int8_t value) { return {ValueType::i8, Encoder().scalar(value).take()}; }
MetadataValue MetadataValue::u16(uint16_t value) { return {ValueType::u16, Encoder().scalar(value).take()}; }
MetadataValue MetadataValue::i16(int16_t value) { return {ValueType::i16, Encoder().scalar(value).take()}; }
MetadataValue MetadataValue::u32(uint32_t value) { return {ValueType::u32, Encoder().scalar(value).take()}; }
MetadataValue MetadataValue::i32(int32_t value) { return {ValueType::i32, Encoder().scalar(value).take()}; }
MetadataValue MetadataValue::f32(float value) { return {ValueType::f32, Encoder().scalar(value).take()}; }
MetadataValue MetadataValue::u64(uint64_t value) { return {ValueType::u64, Encoder().scalar(value).take()}; }
MetadataValue MetadataValue::i64(int64_t value) { return {ValueType::i64, Encoder().scalar(value).take()}; }
MetadataValue MetadataValue::f64(double value) { return {ValueType::f64, Encoder().scalar(value).take()}; }
MetadataValue MetadataValue::boolean(bool value) {
  return {ValueType::boolean, Encoder().scalar(static_cast<uint8_t>(value ? 1 : 0)).take()};
}
MetadataValue MetadataValue::string(std::string_view value) { return {ValueType::string, Encoder().string(value).take()}; }

Result<MetadataValue> MetadataValue::array(ValueType element_type, std::span<const MetadataValue> elements) {
  Encoder out;
  out.u32(static_cast<uint32_t>(element_type)).u64(elements.size());
  for (size_t i = 0; i < elements.size(); ++i) {
    if (elements[i].type_id_ != static_cast<uint32_t>(element_type))
      return invalid("array of " + to_string(element_type) + ": element " + std::to_string(i) + " has type " +
                     to_string(static_cast<ValueType>(elements[i].type_id_)));
    out.bytes(elements[i].payload_);
  }
  return MetadataValue(ValueType::array, out.take());
}

MetadataValue MetadataValue::strings(std::span<const std::string> values) {
  Encoder out;
  out.u32(static_cast<uint32_t>(ValueType::string)).u64(values.size());
  for (const std::string& value : values) out.string(value);
  return {ValueType::array, out.take()};
}

MetadataValue MetadataValue::f32s(std::span<const float> values) {
  Encoder out;
  out.u32(static_cast<uint32_t>(ValueType::f32)).u64(values.size()).bytes(std::as_bytes(values));
  return {ValueType::array, out.take()};
}

MetadataValue MetadataValue::i32s(std::span<const int32_t> values) {
  Encoder out;
  out.u32(static_cast<uint32_t>(ValueType::i32)).u64(values.size()).bytes(std::as_bytes(values));
  return {ValueType::array, out.take()};
}

MetadataValue MetadataValue::raw(uint32_t type_id, std::vector<std::byte> payload) {
  MetadataValue value(ValueType::u8, std::move(payload));
  value.type_id_ = type_id;
  return value;
}

Result<Writer> Writer::create(WriterOptions options) {
  if (!options.checks) {
    if (options.alignment == 0) return invalid("the alignment must not be 0, even with checks off");
    return Writer(options, Checked{});
  }
  if (options.version != 2 && options.version != 3)
    return invalid("version " + std::to_string(options.version) + " (only 2 and 3 are written)");
  if (options.alignment == 0 || (options.alignment & (options.alignment - 1)) != 0 ||
      options.alignment > std::numeric_limits<uint32_t>::max())
    return invalid("alignment " + std::to_string(options.alignment) + " is not a power of two that fits uint32");
  return Writer(options, Checked{});
}

Status Writer::add(std::string key, MetadataValue value) {
  if (options_.checks) {
    for (const auto& [existing, unused] : metadata_)
      if (existing == key) return invalid("duplicate metadata key " + quote(key));
    const MetadataValue expected = MetadataValue::u32(static_cast<uint32_t>(options_.alignment));
    if (key == "general.alignment" &&
        (value.type_id() != expected.type_id() || !std::ranges::equal(value.payload(), expected.payload())))
      return invalid("general.alignment must be the uint32 " + std::to_string(options_.alignment) + " of the options");
  }
  metadata_.emplace_back(std::move(key), std::move(value));
  return {};
}

Status Writer::add_tensor(TensorToWrite tensor) {
  if (options_.checks) {
    ATTENDRE_TRY(check_tensor(tensor));
    // Every tensor before this one is at its place in the layout (checked
    // here), so this one's place follows from their sizes.
    uint64_t place = 0;
    for (const TensorToWrite& existing : tensors_) {
      if (existing.name == tensor.name) return invalid("duplicate tensor name " + quote(tensor.name));
      place = align_up(place + existing.data.size(), options_.alignment);
    }
    if (tensor.offset && *tensor.offset != place)
      return invalid("tensor " + quote(tensor.name) + ": offset " + std::to_string(*tensor.offset) +
                     ", the layout puts it at " + std::to_string(place) + " (after the tensors before it, each padded "
                     "to the alignment)");
  }
  tensors_.push_back(std::move(tensor));
  return {};
}

Result<std::vector<std::byte>> Writer::bytes() const {
  const uint64_t alignment = options_.alignment;
  const bool has_alignment_key = std::any_of(metadata_.begin(), metadata_.end(),
                                             [](const auto& entry) { return entry.first == "general.alignment"; });
  const bool add_alignment_key = !has_alignment_key && alignment != kDefaultAlignment;

  // Offsets first: a tensor without one goes after the end of the one before
  // (with checks on, every tensor is there: add_tensor saw to it).
  std::vector<uint64_t> offsets;
  uint64_t next = 0, section = 0;
  for (const TensorToWrite& t : tensors_) {
    offsets.push_back(t.offset ? *t.offset : align_up(next, alignment));
    next = offsets.back() + t.data.size();
    section = std::max(section, align_up(next, alignment));
  }
  Encoder out;
  out.bytes(std::as_bytes(std::span("GGUF", 4))).u32(options_.version);
  out.u64(tensors_.size()).u64(metadata_.size() + (add_alignment_key ? 1 : 0));
  for (const auto& [key, value] : metadata_) out.string(key).u32(value.type_id()).bytes(value.payload());
  if (add_alignment_key) {
    const MetadataValue value = MetadataValue::u32(static_cast<uint32_t>(alignment));
    out.string("general.alignment").u32(value.type_id()).bytes(value.payload());
  }
  for (size_t i = 0; i < tensors_.size(); ++i) {
    const TensorToWrite& t = tensors_[i];
    out.string(t.name).u32(static_cast<uint32_t>(t.dims.size()));
    for (const uint64_t d : t.dims) out.u64(d);
    out.u32(static_cast<uint32_t>(t.type)).u64(offsets[i]);
  }
  out.zeros(align_up(out.size(), alignment) - out.size());
  std::vector<std::byte> file = out.take();
  const size_t data_start = file.size();
  file.resize(data_start + section, std::byte{0});
  for (size_t i = 0; i < tensors_.size(); ++i)
    std::copy(tensors_[i].data.begin(), tensors_[i].data.end(), file.begin() + static_cast<ptrdiff_t>(data_start + offsets[i]));
  return file;
}

Status Writer::write(const std::filesystem::path& path) const {
  ATTENDRE_TRY_ASSIGN(const std::vector<std::byte> file, bytes());
  // Same folder as the target, so that the rename stays on one filesystem and is atomic.
  std::filesystem::path temporary = path;
  temporary += ".tmp-" + std::to_string(::getpid());
  const std::string name = temporary.string();
  const int fd = ::open(name.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return Status(ErrorCode::io_error, path.string() + ": cannot create " + name + ": " + errno_text());
  const auto give_up = [&](const std::string& what) {
    const std::string reason = errno_text();
    ::close(fd);
    std::error_code ignored;
    std::filesystem::remove(temporary, ignored);
    return Status(ErrorCode::io_error, name + ": " + what + ": " + reason);
  };
  for (size_t written = 0; written < file.size();) {
    const ssize_t n = ::write(fd, file.data() + written, file.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return give_up("write failed");
    written += static_cast<size_t>(n);
  }
  // Without fsync, a crash soon after the rename can leave an empty file at `path`.
  if (::fsync(fd) != 0) return give_up("fsync failed");
  if (::close(fd) != 0) {
    const std::string reason = errno_text();
    std::error_code ignored;
    std::filesystem::remove(temporary, ignored);
    return Status(ErrorCode::io_error, name + ": close failed: " + reason);
  }
  std::error_code ec;
  std::filesystem::rename(temporary, path, ec);
  if (ec) {
    std::error_code ignored;
    std::filesystem::remove(temporary, ignored);
    return Status(ErrorCode::io_error, path.string() + ": cannot rename " + name + " into place: " + ec.message());
  }
  return {};
}

Result<MetadataValue> copy_value(const Value& value, std::string_view key) {
  ATTENDRE_TRY_ASSIGN(const ValueType type, value.type());
  switch (type) {
    case ValueType::u8:
    case ValueType::u16:
    case ValueType::u32:
    case ValueType::u64: {
      ATTENDRE_TRY_ASSIGN(const uint64_t u, value.as_u64(key));
      if (type == ValueType::u8) return MetadataValue::u8(static_cast<uint8_t>(u));
      if (type == ValueType::u16) return MetadataValue::u16(static_cast<uint16_t>(u));
      if (type == ValueType::u32) return MetadataValue::u32(static_cast<uint32_t>(u));
      return MetadataValue::u64(u);
    }
    case ValueType::i8:
    case ValueType::i16:
    case ValueType::i32:
    case ValueType::i64: {
      ATTENDRE_TRY_ASSIGN(const int64_t i, value.as_i64(key));
      if (type == ValueType::i8) return MetadataValue::i8(static_cast<int8_t>(i));
      if (type == ValueType::i16) return MetadataValue::i16(static_cast<int16_t>(i));
      if (type == ValueType::i32) return MetadataValue::i32(static_cast<int32_t>(i));
      return MetadataValue::i64(i);
    }
    case ValueType::f32:
    case ValueType::f64: {
      ATTENDRE_TRY_ASSIGN(const double f, value.as_f64(key));
      return type == ValueType::f32 ? MetadataValue::f32(static_cast<float>(f)) : MetadataValue::f64(f);
    }
    case ValueType::boolean: {
      ATTENDRE_TRY_ASSIGN(const bool b, value.as_bool(key));
      return MetadataValue::boolean(b);
    }
    case ValueType::string: {
      ATTENDRE_TRY_ASSIGN(const std::string_view s, value.as_string(key));
      return MetadataValue::string(s);
    }
    case ValueType::array: break;
  }
  ATTENDRE_TRY_ASSIGN(const ValueType element_type, value.element_type());
  ATTENDRE_TRY_ASSIGN(const uint64_t size, value.size());
  std::vector<MetadataValue> elements;
  elements.reserve(size);  // no larger than the file: the reader checked the count against it
  for (uint64_t i = 0; i < size; ++i) {
    ATTENDRE_TRY_ASSIGN(const Value element, value.at(i));
    ATTENDRE_TRY_ASSIGN(MetadataValue copy, copy_value(element, key));
    elements.push_back(std::move(copy));
  }
  return MetadataValue::array(element_type, elements);
}

}  // namespace attendre::gguf
