// .npy reading and writing; see npy.hpp for the contract.
// Format reference: numpy/lib/format.py (NEP 1).
#include "npy/npy.hpp"

#include "core/fail.hpp"
#include "core/printable.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <limits>
#include <memory>
#include <optional>
#include <string_view>
#include <system_error>
#include <utility>

#ifdef _WIN32
#include <process.h>
#define ATTENDRE_GETPID _getpid
#else
#include <unistd.h>
#define ATTENDRE_GETPID getpid
#endif

namespace attendre::npy {
namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicLen = 6;
constexpr size_t kAlign = 64;  // numpy aligns the data to 64 bytes since 1.14

struct DTypeInfo {
  DType dtype;
  const char* name;
  const char* descr;
  size_t size;
};
constexpr DTypeInfo kDTypes[] = {
    {DType::f32, "float32", "<f4", 4}, {DType::f64, "float64", "<f8", 8}, {DType::i64, "int64", "<i8", 8},
    {DType::u8, "uint8", "|u1", 1},    {DType::i32, "int32", "<i4", 4},   {DType::u32, "uint32", "<u4", 4},
};

const DTypeInfo& info(DType dtype) {
  for (const DTypeInfo& entry : kDTypes)
    if (entry.dtype == dtype) return entry;
  fail(ErrorCode::invalid_argument, "npy: invalid DType value " + std::to_string(static_cast<int>(dtype)));
}

std::string errno_text() { return std::generic_category().message(errno); }

// Header text quoted in a message, escaped as every message escapes text
// from a file (core/printable.hpp), cut short.
std::string printable(std::string_view text) {
  constexpr size_t kMaxQuoted = 64;
  return attendre::printable(text, kMaxQuoted);
}

[[noreturn]] void malformed(std::string_view name, const std::string& what) {
  fail(ErrorCode::malformed_input, std::string(name) + ": " + what);
}

// Element count and byte size of `shape`, or the first problem as text so
// that the reader and the writer can each blame the right party.
std::optional<std::string> measure(std::span<const int64_t> shape, DType dtype, int64_t& count, size_t& bytes) {
  count = 1;
  for (const int64_t dim : shape) {
    if (dim < 0) return "negative dimension " + std::to_string(dim) + " in shape " + shape_string(shape);
    if (dim != 0 && count > std::numeric_limits<int64_t>::max() / dim)
      return "shape " + shape_string(shape) + " is too large (element count overflows)";
    count *= dim;
  }
  const size_t item = info(dtype).size;
  if (static_cast<uint64_t>(count) > std::numeric_limits<size_t>::max() / item)
    return "shape " + shape_string(shape) + " is too large (byte size overflows)";
  bytes = static_cast<size_t>(count) * item;
  return std::nullopt;
}

struct Header {
  std::string descr;
  bool fortran_order = false;
  std::vector<int64_t> shape;
};

// A small parser for the Python dict literal numpy writes, e.g.
// {'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }
// It accepts what Python would (any key order, whitespace, trailing commas,
// either quote, Python 2's "3L") rather than numpy's exact spelling, because
// other writers and older numpy versions spell the header differently.
class HeaderParser {
 public:
  HeaderParser(std::string_view name, std::string_view text) : name_(name), text_(text) {}

  Header parse() {
    Header header;
    bool seen_descr = false, seen_fortran = false, seen_shape = false;
    expect('{');
    while (!consume('}')) {
      skip_ws();
      const size_t key_pos = pos_;
      const std::string key = parse_string();
      expect(':');
      skip_ws();
      bool* seen = nullptr;
      if (key == "descr") seen = &seen_descr;
      if (key == "fortran_order") seen = &seen_fortran;
      if (key == "shape") seen = &seen_shape;
      if (!seen) error_at(key_pos, "unexpected key '" + printable(key) + "'");
      if (*seen) error_at(key_pos, "duplicate key '" + key + "'");
      *seen = true;
      if (key == "descr") {
        if (pos_ == text_.size()) error("expected the 'descr' string");
        if (peek() != '\'' && peek() != '"') error("'descr' must be a string (structured dtypes are not supported)");
        header.descr = parse_string();
      } else if (key == "fortran_order") {
        header.fortran_order = parse_bool();
      } else {
        header.shape = parse_shape();
      }
      if (!consume(',') && peek() != '}') error("expected ',' or '}'");
    }
    skip_ws();
    if (pos_ != text_.size())
      error("unexpected text after the header dict (the header length field says " + std::to_string(text_.size()) +
            " bytes)");
    if (!seen_descr) error_at(0, "missing key 'descr'");
    if (!seen_fortran) error_at(0, "missing key 'fortran_order'");
    if (!seen_shape) error_at(0, "missing key 'shape'");
    return header;
  }

 private:
  // A dict cut short is most often a header length field that is too short
  // (a hand-written or garbled prefix), so that case says so rather than
  // blaming whatever value the cut happened to land in.
  [[noreturn]] void error_at(size_t at, const std::string& what) const {
    if (at >= text_.size())
      malformed(name_, "malformed header: " + what + " where the header ends (header ended at offset " +
                           std::to_string(text_.size()) + "; is the header length field too short?)");
    malformed(name_, "malformed header: " + what + " at offset " + std::to_string(at));
  }
  [[noreturn]] void error(const std::string& what) const { error_at(pos_, what); }

  // '\0' past the end keeps the callers' bounds checks implicit; a NUL is
  // never valid in a header anyway.
  char peek() const { return pos_ < text_.size() ? text_[pos_] : '\0'; }

  void skip_ws() {
    while (peek() == ' ' || peek() == '\t' || peek() == '\n' || peek() == '\r') ++pos_;
  }

  // Skips whitespace, then `c` if it is next.
  bool consume(char c) {
    skip_ws();
    if (peek() != c) return false;
    ++pos_;
    return true;
  }

  void expect(char c) {
    if (!consume(c)) error(std::string("expected '") + c + "'");
  }

  // No escape handling: no key or descr numpy reads contains a quote or backslash.
  std::string parse_string() {
    const char quote = peek();
    if (quote != '\'' && quote != '"') error("expected a quoted string");
    const size_t end = text_.find(quote, pos_ + 1);
    if (end == std::string_view::npos) error_at(text_.size(), "unterminated string");
    std::string value(text_.substr(pos_ + 1, end - pos_ - 1));
    if (value.find('\\') != std::string::npos) error("escape sequences are not supported");
    pos_ = end + 1;
    return value;
  }

  bool parse_bool() {
    const std::string_view rest = text_.substr(pos_);
    for (const bool value : {true, false}) {
      const std::string_view word = value ? "True" : "False";
      if (rest.substr(0, word.size()) == word) {
        pos_ += word.size();
        return value;
      }
      if (word.substr(0, rest.size()) == rest) error_at(text_.size(), "'fortran_order' is cut short");
    }
    error("'fortran_order' must be True or False");
  }

  int64_t parse_int() {
    const size_t start = pos_;
    const bool negative = peek() == '-';
    if (peek() == '-' || peek() == '+') ++pos_;
    if (peek() < '0' || peek() > '9') error("expected an integer dimension");
    // Checked before each step: a crafted header must not wrap around into a
    // small, plausible dim.
    int64_t value = 0;
    for (; peek() >= '0' && peek() <= '9'; ++pos_) {
      const int digit = peek() - '0';
      if (value > (std::numeric_limits<int64_t>::max() - digit) / 10)
        error_at(start, "dimension " + std::string(text_.substr(start, pos_ + 1 - start)) + "... is too large");
      value = value * 10 + digit;
    }
    if (peek() == 'L') ++pos_;  // a Python 2 long, written by old numpy
    return negative ? -value : value;
  }

  std::vector<int64_t> parse_shape() {
    const size_t start = pos_;
    if (peek() != '(') error("'shape' must be a tuple");
    ++pos_;
    std::vector<int64_t> shape;
    bool trailing_comma = false;
    while (!consume(')')) {
      shape.push_back(parse_int());
      trailing_comma = consume(',');
      if (!trailing_comma && peek() != ')') error("expected ',' or ')' in 'shape'");
    }
    // Python reads "(5)" as the int 5 and numpy refuses it; so do we, since a
    // writer producing it is likely wrong about other things too.
    if (shape.size() == 1 && !trailing_comma)
      error_at(start, "'shape' (" + std::to_string(shape[0]) + ") is not a tuple, a 1-d shape is written (" +
                          std::to_string(shape[0]) + ",)");
    return shape;
  }

  std::string_view name_;
  std::string_view text_;
  size_t pos_ = 0;
};

DType dtype_from_descr(std::string_view name, const std::string& d) {
  // One-byte types have no byte order; numpy writes '|', other writers '<'.
  if (d == "|b1" || d == "<u1") return DType::u8;
  for (const DTypeInfo& entry : kDTypes)
    if (d == entry.descr) return entry.dtype;
  if (!d.empty() && (d[0] == '>' || d[0] == '!'))
    malformed(name, "dtype " + printable(d) + " is big-endian, which is not supported; save little-endian "
                    "(a.astype('<" + printable(d.substr(1)) + "'))");
  malformed(name, "unsupported dtype " + printable(d) + " (supported: <f4, <f8, <i8, <i4, <u4, |u1, |b1)");
}

struct FileCloser {
  void operator()(std::FILE* f) const { std::fclose(f); }
};
using File = std::unique_ptr<std::FILE, FileCloser>;

// Where the bytes of a .npy come from: a file is read piece by piece (its
// data straight into the array, never twice in memory), a span in place.
class Source {
 public:
  virtual ~Source() = default;
  virtual uintmax_t size() const = 0;
  // The next n bytes into dst; throws io_error when they cannot be read.
  virtual void read(void* dst, size_t n) = 0;
};

class FileSource final : public Source {
 public:
  explicit FileSource(const std::filesystem::path& path) : name_(path.string()), file_(std::fopen(name_.c_str(), "rb")) {
    if (!file_) fail(ErrorCode::io_error, name_ + ": cannot open for reading: " + errno_text());
    std::error_code ec;
    size_ = std::filesystem::file_size(path, ec);
    if (ec) fail(ErrorCode::io_error, name_ + ": cannot determine the file size: " + ec.message());
  }
  uintmax_t size() const override { return size_; }
  void read(void* dst, size_t n) override {
    if (n != 0 && std::fread(dst, 1, n, file_.get()) != n)
      fail(ErrorCode::io_error, name_ + ": read failed: " +
                                    (std::ferror(file_.get()) ? errno_text() : std::string("unexpected end of file")));
  }

 private:
  std::string name_;
  File file_;
  uintmax_t size_ = 0;
};

class SpanSource final : public Source {
 public:
  explicit SpanSource(std::span<const std::byte> bytes) : bytes_(bytes) {}
  uintmax_t size() const override { return bytes_.size(); }
  void read(void* dst, size_t n) override {
    // parse() checks every length against size() first, so this only
    // guards against a bug in that bookkeeping.
    require(n <= bytes_.size() - offset_, "npy: read past the end of the buffer");
    if (n != 0) std::memcpy(dst, bytes_.data() + offset_, n);
    offset_ += n;
  }

 private:
  std::span<const std::byte> bytes_;
  size_t offset_ = 0;
};

// Every length in the file is checked against the source's size before it is
// used, so a hostile header can neither over-read nor allocate more than the
// file holds.
Array parse_source(Source& source, std::string_view name, std::string& descr_out) {
  const uintmax_t file_size = source.size();
  // magic (6), version (2), header length (2 in 1.0, 4 in 2.0 and 3.0)
  unsigned char pre[12] = {};
  source.read(pre, static_cast<size_t>(std::min<uintmax_t>(file_size, 8)));
  if (file_size < kMagicLen || std::memcmp(pre, kMagic, kMagicLen) != 0)
    malformed(name, "not a .npy file (missing \\x93NUMPY magic)");
  if (file_size < 8) malformed(name, "truncated: file ends inside the format version");
  if (pre[7] != 0 || pre[6] < 1 || pre[6] > 3)
    malformed(name, "unsupported .npy format version " + std::to_string(pre[6]) + "." + std::to_string(pre[7]) +
                        " (supported: 1.0, 2.0, 3.0)");
  const size_t prefix = pre[6] == 1 ? 10 : 12;
  if (file_size < prefix) malformed(name, "truncated: file ends inside the header length");
  source.read(pre + 8, prefix - 8);
  uint32_t header_len = 0;
  for (size_t i = prefix; i-- > 8;) header_len = (header_len << 8) | pre[i];
  if (file_size - prefix < header_len)
    malformed(name, "truncated: header promises " + std::to_string(header_len) + " bytes of header, file has " +
                        std::to_string(file_size - prefix));

  std::string text(header_len, '\0');
  source.read(text.data(), header_len);
  Header header = HeaderParser(name, text).parse();

  const DType dtype = dtype_from_descr(name, header.descr);
  if (header.fortran_order) malformed(name, "Fortran order is not supported, save with C order");
  int64_t count = 0;
  size_t bytes = 0;
  if (auto problem = measure(header.shape, dtype, count, bytes)) malformed(name, *problem);
  const uintmax_t available = file_size - prefix - header_len;
  if (available < bytes)
    malformed(name, "truncated: header promises " + std::to_string(bytes) + " bytes of data, file has " +
                        std::to_string(available));
  // numpy ends every header with '\n'; without it, extra bytes after the data
  // are most likely the rest of a header whose length field is too short.
  if (available > bytes)
    malformed(name, "trailing bytes: " + std::to_string(available - bytes) + " bytes after the " +
                        std::to_string(bytes) + " bytes of data" +
                        (text.empty() || text.back() != '\n'
                             ? " (the header does not end with a newline: is its length field, " +
                                   std::to_string(header_len) + ", too short?)"
                             : std::string()));

  Array array{dtype, std::move(header.shape), std::vector<std::byte>(bytes)};
  source.read(array.data.data(), bytes);
  descr_out = std::move(header.descr);
  return array;
}

Array read_impl(const std::filesystem::path& path, std::string& descr_out) {
  FileSource file(path);
  return parse_source(file, path.string(), descr_out);
}

// Magic, version, header length and the header dict padded so that the data
// starts on a 64-byte boundary, in numpy's own spelling.
std::string header_bytes(DType dtype, std::span<const int64_t> shape) {
  std::string header =
      "{'descr': '" + descr(dtype) + "', 'fortran_order': False, 'shape': " + shape_string(shape) + ", }";
  // 1.0 stores the header length in a u16; like numpy, fall back to 2.0 for
  // longer headers (only absurd ranks get there).
  size_t prefix = 10;
  const auto padded = [&] { return (prefix + header.size() + 1 + kAlign - 1) / kAlign * kAlign - prefix; };
  if (padded() > std::numeric_limits<uint16_t>::max()) prefix = 12;
  const size_t header_len = padded();
  header.resize(header_len - 1, ' ');
  header += '\n';
  std::string out(kMagic, kMagicLen);
  out += {static_cast<char>(prefix == 10 ? 1 : 2), '\0'};
  for (size_t i = 0; i < prefix - 8; ++i) out += static_cast<char>((header_len >> (8 * i)) & 0xff);
  return out + header;
}

}  // namespace

std::string to_string(DType dtype) { return info(dtype).name; }
std::string descr(DType dtype) { return info(dtype).descr; }
size_t item_size(DType dtype) { return info(dtype).size; }

std::string shape_string(std::span<const int64_t> shape) {
  std::string s = "(";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + (shape.size() == 1 ? ",)" : ")");
}

int64_t Array::element_count() const {
  int64_t count = 0;
  size_t bytes = 0;
  if (auto problem = measure(shape, dtype, count, bytes)) fail(ErrorCode::invalid_argument, "npy::Array: " + *problem);
  return count;
}

Array read(const std::filesystem::path& path) {
  std::string ignored;
  return read_impl(path, ignored);
}

Array parse(std::span<const std::byte> bytes, std::string_view name) {
  SpanSource source(bytes);
  std::string ignored;
  return parse_source(source, name, ignored);
}

Array read_expect(const std::filesystem::path& path, DType dtype, size_t rank) {
  std::string found;
  Array array = read_impl(path, found);
  // The descr as stored, so that a bool file is not misreported as uint8.
  if (array.dtype != dtype)
    malformed(path.string(), "dtype is " + found + ", expected " + to_string(dtype) + " (" + descr(dtype) + ")");
  if (array.shape.size() != rank)
    malformed(path.string(), "shape " + shape_string(array.shape) + " has rank " +
                                 std::to_string(array.shape.size()) + ", expected rank " + std::to_string(rank));
  return array;
}

StreamWriter::StreamWriter(std::filesystem::path path, DType dtype, std::span<const int64_t> shape)
    : path_(std::move(path)), dtype_(dtype) {
  int64_t count = 0;
  size_t bytes = 0;
  if (auto problem = measure(shape, dtype, count, bytes))
    fail(ErrorCode::invalid_argument, path_.string() + ": npy::StreamWriter: " + *problem);
  remaining_ = bytes;
  file_ = std::fopen(path_.string().c_str(), "wb");
  if (!file_) fail(ErrorCode::io_error, path_.string() + ": cannot create: " + errno_text());
  const std::string header = header_bytes(dtype, shape);
  append_raw(header.data(), header.size());
}

StreamWriter::~StreamWriter() { discard(); }

void StreamWriter::check_element(DType element) const {
  if (element != dtype_)
    fail(ErrorCode::invalid_argument, path_.string() + ": npy::StreamWriter: appending " + to_string(element) +
                                          " to an array of " + to_string(dtype_));
}

void StreamWriter::append(const void* data, size_t bytes) {
  require(file_ != nullptr, path_.string() + ": npy::StreamWriter: append after close");
  require(data != nullptr || bytes == 0, path_.string() + ": npy::StreamWriter: data is null");
  require(bytes <= remaining_, path_.string() + ": npy::StreamWriter: " + std::to_string(bytes) +
                                   " bytes appended, the shape has room for " + std::to_string(remaining_) + " more");
  append_raw(data, bytes);
  remaining_ -= bytes;
}

void StreamWriter::append_raw(const void* data, size_t bytes) {
  if (bytes != 0 && std::fwrite(data, 1, bytes, file_) != bytes) fail_io("write failed");
}

void StreamWriter::close() {
  require(file_ != nullptr, path_.string() + ": npy::StreamWriter: closed twice");
  if (remaining_ != 0) {
    const uint64_t missing = remaining_;
    discard();
    fail(ErrorCode::invalid_argument,
         path_.string() + ": npy::StreamWriter: closed with " + std::to_string(missing) + " bytes of data missing");
  }
  if (std::fflush(file_) != 0) fail_io("write failed");
#ifndef _WIN32
  // Without fsync, a crash soon after the caller's rename can leave an empty
  // file in place on some filesystems, defeating the point of the rename.
  if (::fsync(::fileno(file_)) != 0) fail_io("fsync failed");
#endif
  // fclose reports deferred write errors (NFS, quotas), so it is checked too.
  std::FILE* file = std::exchange(file_, nullptr);
  if (std::fclose(file) != 0) {
    const std::string reason = errno_text();
    std::error_code ignored;
    std::filesystem::remove(path_, ignored);
    fail(ErrorCode::io_error, path_.string() + ": close failed: " + reason);
  }
}

void StreamWriter::fail_io(const std::string& what) {
  const std::string reason = errno_text();  // before discard() can change errno
  discard();
  fail(ErrorCode::io_error, path_.string() + ": " + what + ": " + reason);
}

void StreamWriter::discard() noexcept {
  if (!file_) return;
  std::fclose(std::exchange(file_, nullptr));
  std::error_code ignored;  // the error that got us here is the one worth reporting
  std::filesystem::remove(path_, ignored);
}

void write(const std::filesystem::path& path, DType dtype, std::span<const int64_t> shape, const void* data,
           size_t bytes) {
  const std::string where = path.string() + ": npy::write: ";
  int64_t count = 0;
  size_t expected = 0;
  if (auto problem = measure(shape, dtype, count, expected)) fail(ErrorCode::invalid_argument, where + *problem);
  require(bytes == expected, where + std::to_string(bytes) + " bytes given, shape " + shape_string(shape) + " of " +
                                 to_string(dtype) + " needs " + std::to_string(expected));
  require(data != nullptr || bytes == 0, where + "data is null");

  // Same folder as the target, so that the rename stays on one filesystem and is atomic.
  std::filesystem::path tmp = path;
  tmp += ".tmp-" + std::to_string(ATTENDRE_GETPID());
  {
    StreamWriter writer(tmp, dtype, shape);
    writer.append(data, bytes);
    writer.close();
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::error_code ignored;
    std::filesystem::remove(tmp, ignored);
    fail(ErrorCode::io_error, path.string() + ": cannot rename " + tmp.string() + " into place: " + ec.message());
  }
}

}  // namespace attendre::npy
