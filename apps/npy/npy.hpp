// Reader and writer for NumPy .npy files (format versions 1.0, 2.0, 3.0), the
// interchange format between attendre's replay tool, its tests and Python.
//
// Only little-endian, C-order arrays of a few plain dtypes are supported; every
// other file is rejected with an attendre::Error whose one-line message names
// the file and the problem, so a bad capture is diagnosed without a debugger.
#pragma once

#include <attendre/error.hpp>

#include <algorithm>
#include <bit>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <iterator>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace attendre::npy {

// Data is copied byte for byte between file and memory, which is only right on
// a little-endian host.
static_assert(std::endian::native == std::endian::little, "attendre::npy assumes a little-endian host");

enum class DType { f32, f64, i64, u8, i32, u32 };

// "float32", "float64", "int64", "uint8", "int32", "uint32".
std::string to_string(DType dtype);
// The descr numpy writes for `dtype`: "<f4", "<f8", "<i8", "|u1", "<i4", "<u4".
std::string descr(DType dtype);
size_t item_size(DType dtype);
// "()", "(5,)", "(5, 2, 4)": Python's tuple spelling, matching what users see in numpy.
std::string shape_string(std::span<const int64_t> shape);

// The element types usable with the typed API, one per DType.
template <class T>
concept Element = std::same_as<T, float> || std::same_as<T, double> || std::same_as<T, int64_t> ||
    std::same_as<T, uint8_t> || std::same_as<T, int32_t> || std::same_as<T, uint32_t>;

template <Element T>
constexpr DType dtype_of() {
  if constexpr (std::same_as<T, float>)
    return DType::f32;
  else if constexpr (std::same_as<T, double>)
    return DType::f64;
  else if constexpr (std::same_as<T, int64_t>)
    return DType::i64;
  else if constexpr (std::same_as<T, uint8_t>)
    return DType::u8;
  else if constexpr (std::same_as<T, int32_t>)
    return DType::i32;
  else
    return DType::u32;
}

// An array that owns its bytes: C order, little-endian.
struct Array {
  DType dtype = DType::f32;
  std::vector<int64_t> shape;  // empty for a 0-d array
  std::vector<std::byte> data;

  // Product of the dims; 1 for a 0-d array. Throws invalid_argument on a
  // negative dim or an overflowing product (only possible if shape was edited).
  int64_t element_count() const;

  // The elements viewed as T. Throws invalid_argument when T is not the
  // array's dtype or when data's size disagrees with shape, rather than
  // handing out a span that reads garbage or past the end.
  template <Element T>
  std::span<const T> as() const {
    if (dtype != dtype_of<T>())
      throw Error(ErrorCode::invalid_argument,
           "npy::Array::as: array holds " + to_string(dtype) + ", requested " + to_string(dtype_of<T>()));
    const auto count = static_cast<size_t>(element_count());
    if (data.size() != count * sizeof(T))
      throw Error(ErrorCode::invalid_argument, "npy::Array::as: data holds " + std::to_string(data.size()) + " bytes, shape " +
                                            shape_string(shape) + " of " + to_string(dtype) + " needs " +
                                            std::to_string(count * sizeof(T)));
    // vector<std::byte> storage comes from operator new, aligned for any of
    // the Element types.
    return {reinterpret_cast<const T*>(data.data()), count};
  }
};

// Reads any supported .npy file. '|b1' (bool) is read as DType::u8.
// Throws io_error when the file cannot be opened or read, malformed_input when
// its content breaks the format or uses an unsupported dtype or layout.
Array read(const std::filesystem::path& path);

// read() from bytes already in memory, with the same checks and messages;
// `name` stands for the file in them. The fuzzing harness's entry point.
Array parse(std::span<const std::byte> bytes, std::string_view name);

// read(), then checks dtype and rank (number of dims); a mismatch throws
// malformed_input naming the file, e.g. "q.npy: dtype is <f8, expected float32 (<f4)".
Array read_expect(const std::filesystem::path& path, DType dtype, size_t rank);

// Writes `bytes` bytes at `data` as an array of `dtype` and `shape`.
// Throws invalid_argument when bytes disagrees with shape, io_error when the
// file cannot be written. The write is atomic: the file is written to
// "<path>.tmp-<pid>" and renamed over `path`, so a failed write leaves any
// previous file at `path` untouched and never a partial one.
void write(const std::filesystem::path& path, DType dtype, std::span<const int64_t> shape, const void* data,
           size_t bytes);

template <Element T>
void write(const std::filesystem::path& path, std::span<const int64_t> shape, std::span<const T> values) {
  write(path, dtype_of<T>(), shape, values.data(), values.size_bytes());
}

inline void write(const std::filesystem::path& path, const Array& array) {
  write(path, array.dtype, array.shape, array.data.data(), array.data.size());
}

// Writes one .npy file front to back: the header for a shape known up front,
// then the data in pieces, so that an array far larger than memory can be
// written in bounded blocks. Unlike write(), it writes `path` itself: the
// caller picks a private location (a temporary folder) and moves the file
// into place. The file only survives a successful close(); the destructor of
// an unclosed writer removes it.
class StreamWriter {
 public:
  // Creates `path` and writes the header. Throws invalid_argument on a bad
  // shape, io_error when the file cannot be created or written.
  StreamWriter(std::filesystem::path path, DType dtype, std::span<const int64_t> shape);
  ~StreamWriter();
  StreamWriter(const StreamWriter&) = delete;
  StreamWriter& operator=(const StreamWriter&) = delete;

  // Appends `bytes` bytes of data; more than the shape holds throws invalid_argument.
  void append(const void* data, size_t bytes);

  template <Element T>
  void append(std::span<const T> values) {
    check_element(dtype_of<T>());
    append(values.data(), values.size_bytes());
  }

  // Appends `count` copies of `value`, through a small fixed buffer.
  template <Element T>
  void append_repeated(T value, uint64_t count) {
    check_element(dtype_of<T>());
    T block[1024];
    std::fill(std::begin(block), std::end(block), value);
    for (uint64_t left = count; left > 0;) {
      const size_t n = static_cast<size_t>(std::min<uint64_t>(left, std::size(block)));
      append(block, n * sizeof(T));
      left -= n;
    }
  }

  // Data bytes still owed to the shape.
  uint64_t remaining_bytes() const { return remaining_; }

  // Checks that the data is complete, then flushes, fsyncs and closes.
  // Throws invalid_argument when data is missing, io_error when the file
  // system refuses; either way the file is removed.
  void close();

  const std::filesystem::path& path() const { return path_; }

 private:
  void check_element(DType element) const;
  void append_raw(const void* data, size_t bytes);
  [[noreturn]] void fail_io(const std::string& what);
  void discard() noexcept;

  std::filesystem::path path_;
  DType dtype_;
  std::FILE* file_ = nullptr;
  uint64_t remaining_ = 0;
};

}  // namespace attendre::npy
