// Reader of GGUF files (versions 2 and 3, little-endian), the model format of
// llama.cpp and most on-device LLM apps: header, metadata of every value
// type (nested arrays included), tensor infos and tensor data. The file is
// memory-mapped, never read whole: metadata arrays are decoded on demand and
// tensor data is handed out as spans into the mapping.
//
// Every count, length, offset and extent is checked against the file size
// before it is used, so a malformed or hostile file gives a failed Status
// (malformed_input, or io_error when it cannot be opened or mapped) with a
// one-line message naming the file and the field, never a crash, a hang or
// an allocation larger than the file. Metadata arrays may nest up to
// kMaxArrayNesting levels; tensors have at most kMaxDims dimensions (ggml's).
// Tensor data must be laid out as llama.cpp's reader requires: back to back
// in the order of the tensor infos, each padded to the alignment.
//
// Each fallible call returns a Result or a Status (include/attendre/status.hpp);
// a caller with exceptions that wants them appends value_or_throw() / or_throw().
//
// The host must be little-endian (every phone and desktop target is): tensor
// bytes are handed out as they lie in the file.
#pragma once

#include <attendre/status.hpp>

#include <bit>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace attendre::gguf {

namespace detail {
struct ValueImpl;    // what a Value points at (lib/gguf/gguf_value_impl.hpp)
struct ValueAccess;  // builds Values inside the reader
}
struct FileAccess;  // builds Files inside the reader

static_assert(std::endian::native == std::endian::little, "attendre::gguf assumes a little-endian host");

inline constexpr uint32_t kMaxArrayNesting = 16;  // arrays of arrays of ... deeper files are refused
inline constexpr uint32_t kMaxDims = 4;           // GGML_MAX_DIMS
inline constexpr uint64_t kDefaultAlignment = 32;

// Metadata value types, numbered as in the file.
enum class ValueType : uint32_t {
  u8 = 0, i8 = 1, u16 = 2, i16 = 3, u32 = 4, i32 = 5, f32 = 6, boolean = 7,
  string = 8, array = 9, u64 = 10, i64 = 11, f64 = 12,
};
std::string to_string(ValueType type);  // "uint32", "string", "array", ... ("type 13" for unknown ids)

// Tensor element types (ggml_type numbering). The reader accepts every id
// below; which ones a model loader can use is the loader's business.
enum class TensorType : uint32_t {
  f32 = 0, f16 = 1, q4_0 = 2, q4_1 = 3, q5_0 = 6, q5_1 = 7, q8_0 = 8, q8_1 = 9,
  q2_k = 10, q3_k = 11, q4_k = 12, q5_k = 13, q6_k = 14, q8_k = 15,
  iq2_xxs = 16, iq2_xs = 17, iq3_xxs = 18, iq1_s = 19, iq4_nl = 20, iq3_s = 21, iq2_s = 22, iq4_xs = 23,
  i8 = 24, i16 = 25, i32 = 26, i64 = 27, f64 = 28, iq1_m = 29, bf16 = 30,
  tq1_0 = 34, tq2_0 = 35, mxfp4 = 39,
};
std::string to_string(TensorType type);  // "F32", "Q4_K", ... ("type 31" for unknown ids)
// Elements per block and bytes per block of `type`; nullopt for ids the
// reader does not know (such a tensor is rejected when the file is opened).
struct BlockSize {
  uint32_t elements = 0, bytes = 0;
};
std::optional<BlockSize> block_size(TensorType type);

// One metadata value. Scalars and strings are decoded; arrays keep their
// element type and count and are decoded on demand (a 150K-entry vocabulary
// is not turned into 150K objects unless asked for). A Value shares ownership
// of the file's bytes, so it stays valid after its File is gone.
class Value {
 public:
  // invalid_argument on a default-constructed Value.
  Result<ValueType> type() const;
  // Scalars: the value converted to the requested width when exact (an
  // unsigned value that fits, an integer type for an integer request, any
  // float type for a float request; an integer for a float request when the
  // double holds it exactly). Fails malformed_input naming `key` when the
  // value has another type or does not fit.
  Result<uint64_t> as_u64(std::string_view key) const;
  Result<int64_t> as_i64(std::string_view key) const;
  Result<double> as_f64(std::string_view key) const;
  Result<bool> as_bool(std::string_view key) const;
  Result<std::string_view> as_string(std::string_view key) const;
  // Arrays; on another type they fail malformed_input naming the value.
  Result<ValueType> element_type() const;  // of an array
  Result<uint64_t> size() const;           // elements of an array
  // Element `index` of an array (arrays may nest); invalid_argument when
  // `index` >= size(). Elements of fixed size are found in O(1); strings and
  // arrays through an offset index built on the first call (8 bytes per
  // element, fewer than the elements' own bytes).
  Result<Value> at(uint64_t index) const;


 private:
  friend struct detail::ValueAccess;
  std::shared_ptr<const detail::ValueImpl> impl_;
  Result<const detail::ValueImpl*> impl() const;  // invalid_argument on a default-constructed Value
};

struct TensorInfo {
  std::string name;
  std::vector<uint64_t> dims;  // ggml order: dims[0] is the contiguous (innermost) one; at most kMaxDims, none 0 (none at all: one element)
  TensorType type = TensorType::f32;
  uint64_t offset = 0;  // from the start of the data section
  uint64_t bytes = 0;   // of its data
  uint64_t elements() const;
};

class File {
 public:
  // Opens and maps `path`, parses the header, metadata and tensor infos, and
  // checks every tensor's place in the data section and its extent against
  // the file. Fails as described above.
  static Result<File> open(const std::filesystem::path& path);
  // The same over bytes already in memory (a fuzzer's input, a download),
  // which must outlive the File and every Value taken from it; `name` stands
  // for the file in messages.
  static Result<File> parse(std::span<const std::byte> bytes, const std::filesystem::path& name);

  File(File&&) noexcept;
  File& operator=(File&&) noexcept;
  ~File();

  const std::filesystem::path& path() const;
  uint32_t version() const;
  uint64_t alignment() const;    // general.alignment, default 32
  uint64_t data_offset() const;  // of the data section from the start of the file (aligned)
  uint64_t size() const;         // of the file, in bytes

  // Metadata in file order.
  std::span<const std::string> keys() const;
  // The value of `key`, or nullopt when absent.
  std::optional<Value> find(std::string_view key) const;
  // The value of `key`; fails malformed_input naming the key when absent.
  Result<Value> get(std::string_view key) const;
  // Typed shortcuts: the value converted as by Value::as_*, or `fallback`
  // when absent (malformed_input when present with an unusable type).
  Result<uint64_t> get_u64(std::string_view key, std::optional<uint64_t> fallback = std::nullopt) const;
  Result<int64_t> get_i64(std::string_view key, std::optional<int64_t> fallback = std::nullopt) const;
  Result<double> get_f64(std::string_view key, std::optional<double> fallback = std::nullopt) const;
  Result<bool> get_bool(std::string_view key, std::optional<bool> fallback = std::nullopt) const;
  Result<std::string> get_string(std::string_view key, std::optional<std::string> fallback = std::nullopt) const;
  // Whole arrays decoded at once (vocabularies: tokens, scores, types, merges).
  // Fails malformed_input naming the key on a missing key or another element type.
  Result<std::vector<std::string>> get_strings(std::string_view key) const;
  Result<std::vector<float>> get_f32s(std::string_view key) const;
  Result<std::vector<int32_t>> get_i32s(std::string_view key) const;

  std::span<const TensorInfo> tensors() const;
  const TensorInfo* find_tensor(std::string_view name) const;
  // The tensor's bytes inside the mapping (valid while the File lives);
  // invalid_argument for a TensorInfo, edited or built by the caller, whose
  // extent leaves the data section.
  Result<std::span<const std::byte>> data(const TensorInfo& tensor) const;


 private:
  friend struct FileAccess;
  File();
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace attendre::gguf
