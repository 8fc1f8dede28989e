// Tests for attendre::npy: round trips, hand-built fixtures in the layouts
// other writers produce, and every rejection with its code and message.
#include "support.hpp"

#include <doctest/doctest.h>

#include <array>
#include <atomic>
#include "npy/npy.hpp"
#include <chrono>
#include <cstring>
#include <fstream>
#include <iterator>
#include <limits>
#include <numeric>
#include <span>
#include <string>
#include <vector>

namespace fs = std::filesystem;
namespace npy = attendre::npy;
using attendre::ErrorCode;

namespace {

using attendre::test::TempDir;

using attendre::test::slurp;

void put(const fs::path& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  REQUIRE(out.good());
}

// magic + version + little-endian header length (u16 for 1.x, u32 otherwise) + header + data.
std::string npy_bytes(int major, const std::string& header, const std::string& data, int minor = 0) {
  std::string out = "\x93NUMPY";
  out += static_cast<char>(major);
  out += static_cast<char>(minor);
  const size_t len_size = major == 1 ? 2 : 4;
  for (size_t i = 0; i < len_size; ++i) out += static_cast<char>((header.size() >> (8 * i)) & 0xff);
  return out + header + data;
}

const std::string kF32Header = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }\n";
const std::string kF32Data(24, '\0');

// Runs `f`, which must throw attendre::Error with `code` and a one-line
// message containing `needle`.
template <class F>
void check_error(F&& f, ErrorCode code, const std::string& needle) {
  try {
    f();
  } catch (const attendre::Error& e) {
    const std::string message = e.what();
    CHECK_MESSAGE(e.code() == code, message);
    CHECK_MESSAGE(message.find(needle) != std::string::npos, message);
    CHECK_MESSAGE(message.find('\n') == std::string::npos, message);
    return;
  }
  FAIL("no attendre::Error thrown, expected one containing: " << needle);
}

// Writes `bytes` to name in a fresh dir and expects read() to reject it.
void check_rejected(const std::string& bytes, ErrorCode code, const std::string& needle) {
  TempDir dir;
  const fs::path path = dir / "bad.npy";
  put(path, bytes);
  check_error([&] { npy::read(path); }, code, "bad.npy: ");
  check_error([&] { npy::read(path); }, code, needle);
}

std::string with_header(const std::string& header, const std::string& data = "") { return npy_bytes(1, header, data); }

}  // namespace

TEST_CASE_TEMPLATE("npy round trips every dtype and shape", T, float, double, int64_t, uint8_t, int32_t, uint32_t) {
  TempDir dir;
  const std::vector<std::vector<int64_t>> shapes = {{}, {0}, {7}, {3, 4, 5}};
  for (const auto& shape : shapes) {
    CAPTURE(npy::shape_string(shape));
    const int64_t count = std::accumulate(shape.begin(), shape.end(), int64_t{1}, std::multiplies<>());
    std::vector<T> values(static_cast<size_t>(count));
    for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<T>(i * 7 % 251);
    const fs::path path = dir / "a.npy";
    npy::write<T>(path, shape, values);

    // numpy's layout: version 1.0 and a header padded with spaces to 64 bytes, ending in '\n'.
    const std::string raw = slurp(path);
    REQUIRE(raw.size() >= 10);
    CHECK(raw.substr(0, 8) == std::string("\x93NUMPY\x01\x00", 8));
    const size_t header_len = static_cast<unsigned char>(raw[8]) | static_cast<unsigned char>(raw[9]) << 8;
    CHECK((10 + header_len) % 64 == 0);
    CHECK(raw[10 + header_len - 1] == '\n');
    CHECK(raw.find("'descr': '" + npy::descr(npy::dtype_of<T>()) + "'") != std::string::npos);
    CHECK(raw.size() == 10 + header_len + values.size() * sizeof(T));

    const npy::Array array = npy::read_expect(path, npy::dtype_of<T>(), shape.size());
    CHECK(array.dtype == npy::dtype_of<T>());
    CHECK(array.shape == shape);
    CHECK(array.element_count() == count);
    const auto read_back = array.as<T>();
    CHECK(std::vector<T>(read_back.begin(), read_back.end()) == values);
    // Only a.npy: the temp file was renamed, not left behind.
    CHECK(std::distance(fs::directory_iterator(dir.path), fs::directory_iterator()) == 1);
  }
}

TEST_CASE("npy untyped write and Array write round trip") {
  TempDir dir;
  const std::array<int64_t, 2> shape = {2, 2};
  const std::array<double, 4> values = {1.5, -2.25, 1e300, 0.0};
  npy::write(dir / "d.npy", npy::DType::f64, shape, values.data(), sizeof(values));
  const npy::Array a = npy::read(dir / "d.npy");
  npy::write(dir / "e.npy", a);
  CHECK(slurp(dir / "d.npy") == slurp(dir / "e.npy"));
  CHECK(npy::read(dir / "e.npy").as<double>()[2] == 1e300);
  // Overwriting replaces the old content.
  npy::write<double>(dir / "e.npy", std::array<int64_t, 1>{1}, std::array<double, 1>{4.0});
  CHECK(npy::read(dir / "e.npy").as<double>()[0] == 4.0);
}

TEST_CASE("npy writes format 2.0 when the header outgrows 1.0's u16 length") {
  TempDir dir;
  const std::vector<int64_t> shape(30000, 1);  // "1, " per dim: a header near 90 KB
  const std::array<float, 1> value = {3.0f};
  npy::write<float>(dir / "r.npy", shape, value);
  const std::string raw = slurp(dir / "r.npy");
  REQUIRE(raw.size() > 12);
  CHECK(raw[6] == 2);
  const npy::Array a = npy::read(dir / "r.npy");
  CHECK(a.shape == shape);
  CHECK(a.as<float>()[0] == 3.0f);
}

TEST_CASE("npy names and shape strings") {
  CHECK(npy::to_string(npy::DType::f32) == "float32");
  CHECK(npy::to_string(npy::DType::u32) == "uint32");
  CHECK(npy::descr(npy::DType::u8) == "|u1");
  CHECK(npy::item_size(npy::DType::i64) == 8);
  CHECK(npy::shape_string(std::vector<int64_t>{}) == "()");
  CHECK(npy::shape_string(std::vector<int64_t>{5}) == "(5,)");
  CHECK(npy::shape_string(std::vector<int64_t>{5, 2, 4}) == "(5, 2, 4)");
  CHECK(npy::Array{npy::DType::f32, {}, {}}.element_count() == 1);
  CHECK(npy::Array{npy::DType::f32, {0, 3}, {}}.element_count() == 0);
}

TEST_CASE("npy reads versions 2.0 and 3.0 and tolerant headers") {
  TempDir dir;
  const std::string i32_data = std::string("\x01\x00\x00\x00\xff\xff\xff\xff", 8);
  struct Case {
    const char* name;
    std::string bytes;
  };
  const Case cases[] = {
      {"v2", npy_bytes(2, "{'descr': '<i4', 'fortran_order': False, 'shape': (2,), }\n", i32_data)},
      {"v3", npy_bytes(3, "{'descr': '<i4', 'fortran_order': False, 'shape': (2,), }\n", i32_data)},
      {"order", with_header("{ \"shape\" :( 2 , ) ,'fortran_order':False,\t'descr' : '<i4' , }", i32_data)},
      {"no-comma", with_header("{'fortran_order': False, 'shape': (2,), 'descr': '<i4'}   \n", i32_data)},
      {"py2-long", with_header("{'descr': '<i4', 'fortran_order': False, 'shape': (1L, 2L), }\n", i32_data)},
      {"newlines", with_header("\n{\n'descr':\n'<i4',\r\n'fortran_order': False,'shape':(2,)}", i32_data)},
  };
  for (const Case& c : cases) {
    CAPTURE(c.name);
    put(dir / "f.npy", c.bytes);
    const npy::Array a = npy::read(dir / "f.npy");
    CHECK(a.dtype == npy::DType::i32);
    CHECK(a.element_count() == 2);
    CHECK(a.as<int32_t>()[0] == 1);
    CHECK(a.as<int32_t>()[1] == -1);
  }
  // Bool and '<u1' read as uint8, a 0-d scalar has one element.
  put(dir / "b.npy",
      with_header("{'descr': '|b1', 'fortran_order': False, 'shape': (3,), }\n", std::string("\x01\x00\x01", 3)));
  CHECK(npy::read(dir / "b.npy").as<uint8_t>()[2] == 1);
  put(dir / "u.npy", with_header("{'descr': '<u1', 'fortran_order': False, 'shape': (), }\n", "\x2a"));
  const npy::Array scalar = npy::read(dir / "u.npy");
  CHECK(scalar.shape.empty());
  CHECK(scalar.as<uint8_t>()[0] == 42);
}

TEST_CASE("npy rejects malformed files") {
  const auto mal = ErrorCode::malformed_input;
  check_rejected("", mal, "missing \\x93NUMPY magic");
  check_rejected("PK\x03\x04 not numpy at all", mal, "missing \\x93NUMPY magic");
  check_rejected("\x93NUMPY", mal, "truncated: file ends inside the format version");
  check_rejected(std::string("\x93NUMPY\x01\x00\x10", 9), mal, "truncated: file ends inside the header length");
  check_rejected(npy_bytes(4, kF32Header, kF32Data), mal, "unsupported .npy format version 4.0");
  check_rejected(npy_bytes(1, kF32Header, kF32Data, 1), mal, "version 1.1");
  check_rejected(npy_bytes(1, kF32Header, kF32Data).substr(0, 30), mal, "bytes of header, file has 20");
  check_rejected(with_header(kF32Header, kF32Data.substr(0, 10)), mal,
                 "truncated: header promises 24 bytes of data, file has 10");
  check_rejected(with_header(kF32Header, kF32Data + "xyz"), mal, "trailing bytes");
  check_rejected(with_header("{'descr': '>f4', 'fortran_order': False, 'shape': (2, 3), }\n", kF32Data), mal,
                 "dtype >f4 is big-endian");
  check_rejected(with_header("{'descr': '<c8', 'fortran_order': False, 'shape': (3,), }\n", kF32Data), mal,
                 "unsupported dtype <c8");
  check_rejected(with_header("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (6,), }", kF32Data), mal,
                 "structured dtypes are not supported");
  check_rejected(with_header("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }\n", kF32Data), mal,
                 "Fortran order is not supported, save with C order");
  check_rejected(with_header("{'descr': '<f4', 'fortran_order': False, 'shape': (2, -3), }\n"), mal,
                 "negative dimension -3");
  check_rejected(with_header("{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296), }"), mal,
                 "too large (element count overflows)");
  check_rejected(with_header("{'descr': '<f4', 'fortran_order': False, 'shape': (4611686018427387904,), }"), mal,
                 "too large (byte size overflows)");
  check_rejected(with_header("{'descr': '<u1', 'fortran_order': False, 'shape': (99999999999999999999,), }"), mal,
                 "dimension 9999999999999999999");
  check_rejected(with_header("{'descr': '<f4', 'shape': (6,), }\n", kF32Data), mal, "missing key 'fortran_order'");
  check_rejected(with_header("{'descr': '<f4', 'fortran_order': False, 'shape': (6,), 'x': 1}"), mal,
                 "unexpected key 'x'");
  check_rejected(with_header("{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (6,)}"), mal,
                 "duplicate key 'descr'");
  check_rejected(with_header("{'descr' '<f4', 'fortran_order': False, 'shape': (6,)}"), mal, "expected ':'");
  check_rejected(with_header("{'descr': '<f4, 'fortran_order': False, 'shape': (6,)}"), mal, "malformed header");
  check_rejected(with_header("{'descr': '<f4', 'fortran_order': False, 'shape': (6,)"), mal, "header ended");
  check_rejected(with_header("{'descr': '<f4', 'fortran_order': 0, 'shape': (6,)}"), mal, "True or False");
  check_rejected(with_header("{'descr': '<f4', 'fortran_order': False, 'shape': (6)}"), mal, "is not a tuple");
  check_rejected(with_header("{'descr': '<f4', 'fortran_order': False, 'shape': [6]}"), mal, "must be a tuple");
  check_rejected(with_header("{'descr': '<f4', 'fortran_order': False, 'shape': (6,)} x"), mal, "unexpected text");
  // Text quoted from the file is escaped (found by fuzzing: a key holding a
  // newline broke the one-line message) and cut when long.
  check_rejected(with_header(std::string("{'descr': '<f4', 'fortran_order': False, 'shape': (6,), 'a\nb\0': 1}", 66)),
                 mal, "unexpected key 'a\\x0Ab\\x00'");
  check_rejected(with_header("{'descr': '<f\n', 'fortran_order': False, 'shape': (6,)}"), mal,
                 "unsupported dtype <f\\x0A (supported");
  check_rejected(with_header("{'descr': '" + std::string(100, 'x') + "', 'fortran_order': False, 'shape': (6,)}"), mal,
                 "unsupported dtype " + std::string(64, 'x') + "... (supported");
}

TEST_CASE("npy read_expect and as<T> report mismatches") {
  TempDir dir;
  const std::array<int64_t, 1> shape = {5};
  const std::array<double, 5> values = {};
  npy::write<double>(dir / "q.npy", shape, values);
  check_error([&] { npy::read_expect(dir / "q.npy", npy::DType::f32, 1); }, ErrorCode::malformed_input,
              "q.npy: dtype is <f8, expected float32 (<f4)");
  check_error([&] { npy::read_expect(dir / "q.npy", npy::DType::f64, 2); }, ErrorCode::malformed_input,
              "q.npy: shape (5,) has rank 1, expected rank 2");
  put(dir / "b.npy", with_header("{'descr': '|b1', 'fortran_order': False, 'shape': (1,), }\n", "\x01"));
  check_error([&] { npy::read_expect(dir / "b.npy", npy::DType::f32, 1); }, ErrorCode::malformed_input,
              "dtype is |b1, expected float32");

  npy::Array a = npy::read(dir / "q.npy");
  check_error([&] { a.as<float>(); }, ErrorCode::invalid_argument, "holds float64, requested float32");
  a.data.pop_back();
  check_error([&] { a.as<double>(); }, ErrorCode::invalid_argument, "needs 40");
  check_error([&] { npy::read(dir / "absent.npy"); }, ErrorCode::io_error, "absent.npy: cannot open");
  check_error([&] { npy::read(dir.path); }, ErrorCode::io_error, dir.path.string());
}

TEST_CASE("npy write rejects misuse and writes atomically") {
  TempDir dir;
  const std::array<int64_t, 2> shape = {2, 3};
  const std::array<float, 5> five = {};
  check_error([&] { npy::write<float>(dir / "w.npy", shape, five); }, ErrorCode::invalid_argument,
              "20 bytes given, shape (2, 3) of float32 needs 24");
  check_error([&] { npy::write(dir / "w.npy", npy::DType::f32, std::array<int64_t, 1>{-1}, nullptr, 0); },
              ErrorCode::invalid_argument, "negative dimension -1");
  check_error([&] { npy::write(dir / "w.npy", npy::DType::f32, std::array<int64_t, 1>{1}, nullptr, 4); },
              ErrorCode::invalid_argument, "data is null");
  CHECK(fs::is_empty(dir.path));

  // A folder that does not exist: nothing is created, not even the folder.
  const std::array<float, 6> six = {1, 2, 3, 4, 5, 6};
  check_error([&] { npy::write<float>(dir.path / "missing" / "w.npy", shape, six); }, ErrorCode::io_error, "w.npy");
  CHECK(!fs::exists(dir / "missing"));
  CHECK(fs::is_empty(dir.path));

  // The rename fails when the target is a non-empty folder; the temp file
  // must be gone and the folder untouched.
  fs::create_directories(dir.path / "taken" / "inside");
  check_error([&] { npy::write<float>(dir / "taken", shape, six); }, ErrorCode::io_error, "cannot rename");
  CHECK(fs::is_directory(dir.path / "taken" / "inside"));
  CHECK(std::distance(fs::directory_iterator(dir.path), fs::directory_iterator()) == 1);

  // A failed write leaves the previous file intact.
  npy::write<float>(dir / "w.npy", shape, six);
  const std::string before = slurp(dir / "w.npy");
  check_error([&] { npy::write<float>(dir / "w.npy", shape, five); }, ErrorCode::invalid_argument, "needs 24");
  CHECK(slurp(dir / "w.npy") == before);
}

TEST_CASE("npy blames a header length field that is too short, not the dtype or the data") {
  TempDir dir;
  const std::array<int64_t, 2> shape = {2, 3};
  const std::array<float, 6> six = {1, 2, 3, 4, 5, 6};
  npy::write<float>(dir / "good.npy", shape, six);
  const std::string good = slurp(dir / "good.npy");
  const std::string dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }";
  REQUIRE(good.substr(10, dict.size()) == dict);
  // The same file with its u16 header length field rewritten.
  const auto with_length = [&](size_t length) {
    std::string bytes = good;
    bytes[8] = static_cast<char>(length & 0xff);
    bytes[9] = static_cast<char>(length >> 8);
    return bytes;
  };
  const auto mal = ErrorCode::malformed_input;
  const std::string too_short = "where the header ends (header ended at offset ";
  // Cut right after "'descr':": once reported as a structured dtype.
  check_rejected(with_length(9), mal,
                 "malformed header: expected the 'descr' string " + too_short +
                     "9; is the header length field too short?)");
  check_rejected(with_length(13), mal, "malformed header: unterminated string " + too_short + "13;");
  check_rejected(with_length(37), mal, "malformed header: 'fortran_order' is cut short " + too_short + "37;");
  check_rejected(with_length(55), mal, "malformed header: expected ',' or ')' in 'shape' " + too_short + "55;");
  // Cut after the dict, inside numpy's padding: the rest of the header
  // looks like extra data.
  check_rejected(with_length(dict.size()), mal,
                 "trailing bytes: " + std::to_string(good.size() - 10 - dict.size() - 24) +
                     " bytes after the 24 bytes of data (the header does not end with a newline: is its length field, " +
                     std::to_string(dict.size()) + ", too short?)");
  // Too long: the header swallows data.
  check_rejected(with_length(good.size() - 10 - 8), mal,
                 "unexpected text after the header dict (the header length field says " +
                     std::to_string(good.size() - 10 - 8) + " bytes)");
  // None of them blames the dtype, which is fine.
  for (const size_t length : {size_t{9}, size_t{13}, dict.size()}) {
    const std::string bytes = with_length(length);
    try {
      npy::parse(std::as_bytes(std::span(bytes)), "cut.npy");
      FAIL("accepted a header length of " << length);
    } catch (const attendre::Error& e) {
      CHECK_MESSAGE(std::string(e.what()).find("dtype") == std::string::npos, e.what());
    }
  }
}

TEST_CASE("npy parse reads bytes in memory with the checks and messages of read") {
  TempDir dir;
  const std::array<int64_t, 2> shape = {3, 2};
  const std::array<int32_t, 6> values = {1, -2, 3, -4, 5, -6};
  npy::write<int32_t>(dir / "a.npy", shape, values);
  const std::string bytes = slurp(dir / "a.npy");
  const npy::Array from_file = npy::read(dir / "a.npy");
  const npy::Array from_memory = npy::parse(std::as_bytes(std::span(bytes)), "memory");
  CHECK(from_memory.dtype == from_file.dtype);
  CHECK(from_memory.shape == from_file.shape);
  CHECK(from_memory.data == from_file.data);

  // Every prefix of a good file is refused (none is a complete file), with
  // the given name, never read past its end.
  for (size_t length = 0; length < bytes.size(); ++length) {
    CAPTURE(length);
    check_error([&] { npy::parse(std::as_bytes(std::span(bytes).first(length)), "prefix.npy"); },
                ErrorCode::malformed_input, "prefix.npy: ");
  }
  // The same rejection as read(), under the caller's name.
  const std::string bad = with_header("{'descr': '<c8', 'fortran_order': False, 'shape': (1,), }\n", kF32Data);
  put(dir / "bad.npy", bad);
  std::string from_read;
  try {
    npy::read(dir / "bad.npy");
  } catch (const attendre::Error& e) {
    from_read = e.what();
  }
  REQUIRE(from_read.rfind((dir / "bad.npy") + ": ", 0) == 0);
  check_error([&] { npy::parse(std::as_bytes(std::span(bad)), "other.npy"); }, ErrorCode::malformed_input,
              "other.npy: " + from_read.substr((dir / "bad.npy").size() + 2));
}

TEST_CASE("npy StreamWriter writes in pieces exactly what write writes at once") {
  TempDir dir;
  const std::array<int64_t, 2> shape = {3, 1000};
  std::vector<double> values(3000, std::numeric_limits<double>::quiet_NaN());
  for (size_t i = 0; i < 700; ++i) values[i] = static_cast<double>(i) * 0.5;
  npy::write<double>(dir / "whole.npy", shape, values);
  {
    npy::StreamWriter writer(dir / "pieces.npy", npy::DType::f64, shape);
    CHECK(writer.remaining_bytes() == 3000 * sizeof(double));
    writer.append(std::span<const double>(values).first(300));
    writer.append(std::span<const double>(values).subspan(300, 400));
    writer.append_repeated(std::numeric_limits<double>::quiet_NaN(), 2300);  // more than one fill block
    CHECK(writer.remaining_bytes() == 0);
    writer.close();
  }
  CHECK(slurp(dir / "pieces.npy") == slurp(dir / "whole.npy"));
  // A comparison that tells files apart: one value differs.
  {
    npy::StreamWriter writer(dir / "other.npy", npy::DType::f64, shape);
    writer.append(std::span<const double>(values).first(699));
    writer.append_repeated(-1.0, 2301);
    writer.close();
  }
  CHECK(slurp(dir / "other.npy") != slurp(dir / "whole.npy"));
}

TEST_CASE("npy StreamWriter refuses misuse and leaves no partial file") {
  TempDir dir;
  const std::array<int64_t, 1> shape = {4};
  const std::array<float, 3> three = {1, 2, 3};
  const fs::path path = dir.path / "s.npy";
  {
    npy::StreamWriter writer(path, npy::DType::f32, shape);
    CHECK(fs::exists(path));
    writer.append(std::span<const float>(three));
    check_error([&] { writer.append(std::span<const float>(three)); }, ErrorCode::invalid_argument,
                "12 bytes appended, the shape has room for 4 more");
    check_error([&] { writer.append(std::span<const double>(std::array<double, 1>{1.0})); },
                ErrorCode::invalid_argument, "appending float64 to an array of float32");
    check_error([&] { writer.close(); }, ErrorCode::invalid_argument, "closed with 4 bytes of data missing");
    CHECK(!fs::exists(path));
  }
  {
    // Abandoned without close(): an exception unwinding past the writer.
    npy::StreamWriter writer(path, npy::DType::f32, shape);
    writer.append_repeated(0.5f, 4);
  }
  CHECK(!fs::exists(path));
  check_error([&] { npy::StreamWriter(dir.path / "missing" / "s.npy", npy::DType::f32, shape); }, ErrorCode::io_error,
              "s.npy: cannot create");
  check_error([&] { npy::StreamWriter(path, npy::DType::f32, std::array<int64_t, 1>{-4}); },
              ErrorCode::invalid_argument, "negative dimension -4");
  CHECK(fs::is_empty(dir.path));
}
