// The GGUF file: header, metadata and tensor infos parsed and checked once,
// tensor data handed out as spans of the mapping.
//
// Layout (GGUF v2/v3, little-endian; gguf.md in ggml's documentation):
//   "GGUF" | uint32 version | uint64 tensor count | uint64 metadata count
//   metadata: { string key | uint32 value type | value } x count
//   tensor infos: { string name | uint32 n_dims | uint64 dims[n_dims] | uint32 ggml type | uint64 offset } x count
//   padding to the alignment | data section: the tensors' data in the order of their infos, each
//   padded to the alignment (so each offset is the padded size of the data before it)
// Version 1 used 32-bit counts and lengths and is refused, as llama.cpp does.
#include "gguf/gguf_value_impl.hpp"

#include "core/printable.hpp"

#include <algorithm>
#include <limits>
#include <unordered_map>

namespace attendre::gguf {

using detail::ValueImpl;


namespace {

using detail::Cursor;
using detail::malformed;
using detail::within;

constexpr uint64_t kMinPairBytes = 8 + 4 + 1;           // empty key, type id, one-byte value
constexpr uint64_t kMinTensorInfoBytes = 8 + 4 + 4 + 8;  // empty name, n_dims = 0, type, offset

std::string range_text(uint64_t offset, uint64_t bytes) {
  // Appended piece by piece: GCC 12 warns falsely (-Wrestrict) on "[" + std::to_string(...).
  std::string out = "[";
  out += std::to_string(offset);
  out += ", ";
  out += std::to_string(offset + bytes);
  return out += ")";
}

uint64_t align_up(uint64_t offset, uint64_t alignment) {
  const uint64_t rest = offset % alignment;
  return rest ? offset + (alignment - rest) : offset;
}

std::string dims_text(std::span<const uint64_t> dims) {
  std::string out = "[";
  for (size_t i = 0; i < dims.size(); ++i) out += (i ? ", " : "") + std::to_string(dims[i]);
  return out + "]";
}

uint32_t byteswap32(uint32_t v) {
  return (v >> 24) | ((v >> 8) & 0xFF00u) | ((v << 8) & 0xFF0000u) | (v << 24);
}

}  // namespace

struct File::Impl {
  std::shared_ptr<const detail::Source> source;
  uint32_t version = 0;
  uint64_t alignment = kDefaultAlignment;
  uint64_t data_offset = 0;
  std::vector<std::string> keys;
  std::vector<Value> values;
  std::unordered_map<std::string_view, size_t> key_index;  // views into the source's bytes
  std::vector<TensorInfo> tensors;
  std::unordered_map<std::string_view, size_t> tensor_index;

  explicit Impl(std::shared_ptr<const detail::Source> bytes) : source(std::move(bytes)) {}

  // Parses and checks the whole file.
  Status read() {
    Cursor cursor(source->bytes(), 0);
    Counts counts;
    ATTENDRE_TRY(in_file([&]() -> Status {
      ATTENDRE_TRY_ASSIGN(counts, read_header(cursor));
      return read_metadata(cursor, counts.metadata);
    }));
    ATTENDRE_TRY(read_alignment());  // its own messages: general.alignment is read through a Value
    return in_file([&]() -> Status {
      ATTENDRE_TRY(read_tensor_infos(cursor, counts.tensors));
      return place_data(cursor);
    });
  }

  template <class Body>
  Status in_file(Body&& body) {
    return within(body(), [&] { return source->name(); });
  }

  struct Counts {
    uint64_t tensors = 0, metadata = 0;
  };

  Result<Counts> read_header(Cursor& cursor) {
    const auto bytes = source->bytes();
    if (bytes.size() < 4) return malformed("too short for a GGUF file (" + std::to_string(bytes.size()) + " bytes)");
    if (std::string_view(reinterpret_cast<const char*>(bytes.data()), 4) != "GGUF") {
      static constexpr char kHex[] = "0123456789abcdef";
      std::string seen;
      for (size_t i = 0; i < 4; ++i) {
        const auto b = static_cast<uint8_t>(bytes[i]);
        if (i) seen += ' ';
        seen += kHex[b >> 4];
        seen += kHex[b & 0xF];
      }
      return malformed("not a GGUF file (starts with bytes " + seen + ", expected \"GGUF\")");
    }
    ATTENDRE_TRY(cursor.skip(4));
    ATTENDRE_TRY_ASSIGN(version, within(cursor.read<uint32_t>(), [] { return std::string("version"); }));
    const uint32_t swapped = byteswap32(version);
    if (version > 3 && swapped >= 1 && swapped <= 3)
      return malformed("big-endian GGUF file (version field reads " + std::to_string(swapped) +
                       " byte-swapped): only little-endian files are supported");
    if (version != 2 && version != 3)
      return malformed("GGUF version " + std::to_string(version) + " is not supported (only versions 2 and 3)");
    Counts counts;
    ATTENDRE_TRY_ASSIGN(counts.tensors, within(cursor.read<uint64_t>(), [] { return std::string("tensor count"); }));
    ATTENDRE_TRY_ASSIGN(counts.metadata, within(cursor.read<uint64_t>(), [] { return std::string("metadata count"); }));
    return counts;
  }

  Status read_metadata(Cursor& cursor, uint64_t metadata_count) {
    // Counts are bounded by what the rest of the file can hold before any
    // loop runs on them, so a lying count fails at once instead of slowly.
    if (metadata_count > cursor.left() / kMinPairBytes)
      return malformed("metadata count " + std::to_string(metadata_count) + " exceeds what the " +
                       std::to_string(cursor.left()) + " bytes left in the file can hold (" +
                       std::to_string(kMinPairBytes) + " bytes per key-value pair at least)");
    return read_named(cursor, metadata_count, "metadata key",
                      [&](std::string_view key) { return read_pair(cursor, key); });
  }

  // `count` entries, each a GGUF string naming it followed by what `read_entry(name)`
  // reads; a failure names the entry ("<what> i", and its name once read).
  template <class ReadEntry>
  Status read_named(Cursor& cursor, uint64_t count, const char* what, ReadEntry&& read_entry) {
    for (uint64_t i = 0; i < count; ++i) {
      const auto entry = [&] {
        // Appended piece by piece, as range_text does (GCC 12's false -Wrestrict).
        std::string text = what;
        text += ' ';
        return text += std::to_string(i);
      };
      ATTENDRE_TRY_ASSIGN(const std::string_view name, within(cursor.read_string(), entry));
      ATTENDRE_TRY(within(read_entry(name), [&] { return entry() + " (" + quote(name) + ")"; }));
    }
    return {};
  }

  // The type and value of metadata key `key`, just read.
  Status read_pair(Cursor& cursor, std::string_view key) {
    ATTENDRE_TRY_ASSIGN(const uint32_t type_id, cursor.read<uint32_t>());
    const auto type = static_cast<ValueType>(type_id);
    const uint64_t offset = cursor.offset();
    ATTENDRE_TRY_ASSIGN(const uint64_t size, detail::measure_value(source->bytes(), type, offset, 0));
    ATTENDRE_TRY(cursor.skip(size));
    const auto [it, inserted] = key_index.emplace(key, keys.size());
    if (!inserted) return malformed("duplicate of metadata key " + std::to_string(it->second));
    keys.emplace_back(key);
    values.push_back(detail::ValueAccess::make(source, keys.back(), type, offset, 0));
    return {};
  }

  Status read_alignment() {
    const auto it = key_index.find("general.alignment");
    if (it == key_index.end()) return {};
    ATTENDRE_TRY_ASSIGN(alignment, values[it->second].as_u64("general.alignment"));
    if (alignment == 0 || (alignment & (alignment - 1)) != 0)
      return malformed(source->name() + ": metadata key \"general.alignment\": " + std::to_string(alignment) +
                       " is not a nonzero power of two");
    return {};
  }

  Status read_tensor_infos(Cursor& cursor, uint64_t count) {
    if (count > cursor.left() / kMinTensorInfoBytes)
      return malformed("tensor count " + std::to_string(count) + " exceeds what the " +
                       std::to_string(cursor.left()) + " bytes left in the file can hold (" +
                       std::to_string(kMinTensorInfoBytes) + " bytes per tensor info at least)");
    return read_named(cursor, count, "tensor", [&](std::string_view name) { return read_tensor_info(cursor, name); });
  }

  Status read_tensor_info(Cursor& cursor, std::string_view name) {
    TensorInfo tensor;
    tensor.name = std::string(name);
    ATTENDRE_TRY_ASSIGN(const uint32_t n_dims, cursor.read<uint32_t>());
    if (n_dims > kMaxDims)
      return malformed("has " + std::to_string(n_dims) + " dimensions, more than " + std::to_string(kMaxDims));
    uint64_t elements = 1;
    for (uint32_t d = 0; d < n_dims; ++d) {
      ATTENDRE_TRY_ASSIGN(const uint64_t dim, cursor.read<uint64_t>());
      tensor.dims.push_back(dim);
      if (tensor.dims.back() == 0) return malformed("dimension " + std::to_string(d) + " is 0");
      // ggml counts elements in int64_t.
      if (tensor.dims.back() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) / elements)
        return malformed("element count of dims " + dims_text(tensor.dims) + " overflows int64");
      elements *= tensor.dims.back();
    }
    ATTENDRE_TRY_ASSIGN(const uint32_t type_id, cursor.read<uint32_t>());
    tensor.type = static_cast<TensorType>(type_id);
    const auto block = block_size(tensor.type);
    if (!block) return malformed("unknown tensor type " + std::to_string(static_cast<uint32_t>(tensor.type)));
    const uint64_t row = tensor.dims.empty() ? 1 : tensor.dims[0];
    if (row % block->elements != 0)
      return malformed("row of " + std::to_string(row) + " elements is not a multiple of the " + to_string(tensor.type) +
                       " block of " + std::to_string(block->elements));
    const uint64_t blocks = elements / block->elements;
    if (blocks > std::numeric_limits<uint64_t>::max() / block->bytes)
      return malformed("data size of dims " + dims_text(tensor.dims) + " overflows");
    tensor.bytes = blocks * block->bytes;
    ATTENDRE_TRY_ASSIGN(tensor.offset, cursor.read<uint64_t>());  // checked by place_data
    const auto [it, inserted] = tensor_index.emplace(name, tensors.size());
    if (!inserted) return malformed("duplicate tensor name (also tensor " + std::to_string(it->second) + ")");
    tensors.push_back(std::move(tensor));
    return {};
  }

  // The data section starts at the first multiple of the alignment after the
  // tensor infos. As llama.cpp's reader requires (ggml's gguf.cpp), the
  // tensors follow each other in the order of their infos, each at the
  // running size of the section: the sizes of the tensors before it, each
  // padded to the alignment. So data cannot overlap, and a gap (which is how
  // a tensor whose type field lies about its data would go unnoticed) is
  // refused. Each tensor's data must lie in the file; the padding after the
  // last one need not.
  Status place_data(const Cursor& cursor) {
    const uint64_t end_of_infos = cursor.offset(), size = source->size();
    // Cannot overflow: the alignment was read from the file, so it is at most
    // 2^63, and the file is smaller than 2^63 bytes.
    data_offset = align_up(end_of_infos, alignment);
    const uint64_t section = size > data_offset ? size - data_offset : 0;
    uint64_t expected = 0;
    for (size_t i = 0; i < tensors.size(); ++i) {
      const TensorInfo& t = tensors[i];
      const auto tensor = [&] { return "tensor " + std::to_string(i) + " (" + quote(t.name) + "): "; };
      if (t.offset != expected)
        return malformed(tensor() + "data offset " + std::to_string(t.offset) + ", expected " + std::to_string(expected) +
                         " (tensors follow each other in the order of their infos, each padded to the alignment " +
                         std::to_string(alignment) + ")");
      if (t.bytes > section - std::min(section, t.offset))
        return malformed(tensor() + std::to_string(t.bytes) + " bytes of data at offset " + std::to_string(t.offset) +
                         " extend past the end of the file (the data section holds " + std::to_string(section) +
                         " bytes from file offset " + std::to_string(data_offset) + ")");
      // offset + bytes <= section < 2^63, so the padded end is at most 2^63.
      expected = align_up(t.offset + t.bytes, alignment);
    }
    return {};
  }

  Status key_error(std::string_view key, const std::string& problem) const {
    return malformed(source->name() + ": metadata key " + quote(key) + ": " + problem);
  }

  // The array at `key` with elements of `type`, checked.
  Result<const ValueImpl*> array_of(std::string_view key, ValueType type) const {
    const auto it = key_index.find(key);
    if (it == key_index.end()) return key_error(key, "is missing");
    const ValueImpl& value = detail::ValueAccess::impl(values[it->second]);
    if (value.type != ValueType::array)
      return key_error(key, "has type " + to_string(value.type) + ", expected an array of " + to_string(type));
    if (value.element_type != type)
      return key_error(key,
                       "is an array of " + to_string(value.element_type) + ", expected an array of " + to_string(type));
    return &value;
  }

  template <class T>
  Result<std::vector<T>> scalars(std::string_view key, ValueType type) const {
    ATTENDRE_TRY_ASSIGN(const ValueImpl* checked, array_of(key, type));
    const ValueImpl& value = *checked;
    std::vector<T> out(value.count);
    if (!out.empty()) std::memcpy(out.data(), source->bytes().data() + value.first, out.size() * sizeof(T));
    return out;
  }
};

File::File() = default;
File::File(File&&) noexcept = default;
File& File::operator=(File&&) noexcept = default;
File::~File() = default;

// Builds Files (File's constructor and Impl are private).
struct FileAccess {
  // The File over `source`, parsed and checked.
  static Result<File> read(std::shared_ptr<const detail::Source> source) {
    auto impl = std::make_unique<File::Impl>(std::move(source));
    ATTENDRE_TRY(impl->read());
    File file;
    file.impl_ = std::move(impl);
    return file;
  }
};

Result<File> File::open(const std::filesystem::path& path) {
  ATTENDRE_TRY_ASSIGN(auto source, detail::Source::map(path));
  return FileAccess::read(std::move(source));
}

Result<File> File::parse(std::span<const std::byte> bytes, const std::filesystem::path& name) {
  return FileAccess::read(detail::Source::borrow(bytes, name));
}

const std::filesystem::path& File::path() const { return impl_->source->path(); }
uint32_t File::version() const { return impl_->version; }
uint64_t File::alignment() const { return impl_->alignment; }
uint64_t File::data_offset() const { return impl_->data_offset; }
uint64_t File::size() const { return impl_->source->size(); }
std::span<const std::string> File::keys() const { return impl_->keys; }

std::optional<Value> File::find(std::string_view key) const {
  const auto it = impl_->key_index.find(key);
  if (it == impl_->key_index.end()) return std::nullopt;
  return impl_->values[it->second];
}

Result<Value> File::get(std::string_view key) const {
  auto value = find(key);
  if (!value) return impl_->key_error(key, "is missing");
  return *value;
}

namespace {

// `read` of the value at `key`, or `fallback` when the key is absent and there is one.
template <class T, class Read>
Result<T> value_or(const File& file, std::string_view key, const std::optional<T>& fallback, Read read) {
  if (fallback && !file.find(key)) return *fallback;
  ATTENDRE_TRY_ASSIGN(const Value value, file.get(key));
  return read(value);
}

}  // namespace

Result<uint64_t> File::get_u64(std::string_view key, std::optional<uint64_t> fallback) const {
  return value_or(*this, key, fallback, [&](const Value& v) { return v.as_u64(key); });
}

Result<int64_t> File::get_i64(std::string_view key, std::optional<int64_t> fallback) const {
  return value_or(*this, key, fallback, [&](const Value& v) { return v.as_i64(key); });
}

Result<double> File::get_f64(std::string_view key, std::optional<double> fallback) const {
  return value_or(*this, key, fallback, [&](const Value& v) { return v.as_f64(key); });
}

Result<bool> File::get_bool(std::string_view key, std::optional<bool> fallback) const {
  return value_or(*this, key, fallback, [&](const Value& v) { return v.as_bool(key); });
}

Result<std::string> File::get_string(std::string_view key, std::optional<std::string> fallback) const {
  return value_or(*this, key, fallback, [&](const Value& v) -> Result<std::string> {
    ATTENDRE_TRY_ASSIGN(const std::string_view text, v.as_string(key));
    return std::string(text);
  });
}

Result<std::vector<std::string>> File::get_strings(std::string_view key) const {
  ATTENDRE_TRY_ASSIGN(const ValueImpl* value, impl_->array_of(key, ValueType::string));
  std::vector<std::string> out;
  out.reserve(value->count);  // checked at open: at least 8 bytes of file per string
  Cursor cursor(impl_->source->bytes(), value->first);
  for (uint64_t i = 0; i < value->count; ++i) out.emplace_back(cursor.read_checked_string());
  return out;
}

Result<std::vector<float>> File::get_f32s(std::string_view key) const {
  return impl_->scalars<float>(key, ValueType::f32);
}

Result<std::vector<int32_t>> File::get_i32s(std::string_view key) const {
  return impl_->scalars<int32_t>(key, ValueType::i32);
}

std::span<const TensorInfo> File::tensors() const { return impl_->tensors; }

const TensorInfo* File::find_tensor(std::string_view name) const {
  const auto it = impl_->tensor_index.find(name);
  return it == impl_->tensor_index.end() ? nullptr : &impl_->tensors[it->second];
}

Result<std::span<const std::byte>> File::data(const TensorInfo& tensor) const {
  // A TensorInfo the caller built or edited is checked like one from the file.
  const uint64_t section = size() - std::min(size(), impl_->data_offset);
  if (tensor.offset > section || tensor.bytes > section - tensor.offset)
    return invalid_argument(impl_->source->name() + ": tensor " + quote(tensor.name) + ": data " +
                            range_text(tensor.offset, tensor.bytes) + " is outside the data section");
  return impl_->source->bytes().subspan(impl_->data_offset + tensor.offset, tensor.bytes);
}

uint64_t TensorInfo::elements() const {
  uint64_t count = 1;
  for (const uint64_t d : dims) count *= d;
  return count;
}

}  // namespace attendre::gguf
