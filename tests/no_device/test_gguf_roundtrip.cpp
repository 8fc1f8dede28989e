// GGUF writer -> reader round trips: every value type, nested arrays, every
// tensor type, versions 2 and 3, custom alignment, files and memory; and the
// typed accessors' conversions and refusals.
#include "gguf_test_support.hpp"

#include <cmath>
#include <cstring>
#include <limits>

namespace gguf = attendre::gguf;
using attendre::ErrorCode;
using attendre::test::check_error;
using attendre::test::check_failure;
using gguf::MetadataValue;
using gguf::TensorType;
using gguf::ValueType;

namespace {

std::string cell_name(uint64_t row, uint64_t column) {
  std::string name(1, 'r');  // appended piece by piece: GCC 12 warns falsely (-Wrestrict) on "r" + std::string
  name += std::to_string(row);
  name += 'c';
  name += std::to_string(column);
  return name;
}

// One value of every scalar type plus a string, under keys named by type.
gguf::Writer every_scalar(gguf::WriterOptions options = {}) {
  gguf::Writer writer = gguf::Writer::create(options).value_or_throw();
  writer.add("u8", MetadataValue::u8(250)).or_throw();
  writer.add("i8", MetadataValue::i8(-7)).or_throw();
  writer.add("u16", MetadataValue::u16(65000)).or_throw();
  writer.add("i16", MetadataValue::i16(-32000)).or_throw();
  writer.add("u32", MetadataValue::u32(4000000000u)).or_throw();
  writer.add("i32", MetadataValue::i32(-2000000000)).or_throw();
  writer.add("f32", MetadataValue::f32(1.5f)).or_throw();
  writer.add("bool", MetadataValue::boolean(true)).or_throw();
  writer.add("string", MetadataValue::string("héllo\n\"world\"")).or_throw();
  writer.add("u64", MetadataValue::u64(std::numeric_limits<uint64_t>::max())).or_throw();
  writer.add("i64", MetadataValue::i64(std::numeric_limits<int64_t>::min())).or_throw();
  writer.add("f64", MetadataValue::f64(-0.1)).or_throw();
  writer.add("empty", MetadataValue::string("")).or_throw();
  return writer;
}

void check_every_scalar(const gguf::File& file) {
  CHECK(file.get("u8").value_or_throw().type().value_or_throw() == ValueType::u8);
  CHECK(file.get_u64("u8").value_or_throw() == 250);
  CHECK(file.get_i64("i8").value_or_throw() == -7);
  CHECK(file.get_u64("u16").value_or_throw() == 65000);
  CHECK(file.get_i64("i16").value_or_throw() == -32000);
  CHECK(file.get_u64("u32").value_or_throw() == 4000000000u);
  CHECK(file.get_i64("i32").value_or_throw() == -2000000000);
  CHECK(file.get_f64("f32").value_or_throw() == 1.5);
  CHECK(file.get_bool("bool").value_or_throw());
  CHECK(file.get_string("string").value_or_throw() == "héllo\n\"world\"");
  CHECK(file.get_u64("u64").value_or_throw() == std::numeric_limits<uint64_t>::max());
  CHECK(file.get_i64("i64").value_or_throw() == std::numeric_limits<int64_t>::min());
  CHECK(file.get_f64("f64").value_or_throw() == -0.1);
  CHECK(file.get_string("empty").value_or_throw().empty());
  const std::vector<std::string> expected_keys = {"u8",  "i8",     "u16", "i16", "u32", "i32",  "f32",
                                                  "bool", "string", "u64", "i64", "f64", "empty"};
  CHECK(std::vector<std::string>(file.keys().begin(), file.keys().end()) == expected_keys);
}

}  // namespace

TEST_CASE("gguf round trip: every scalar type, versions 2 and 3, from memory and from a file") {
  attendre::test::GgufTempDir dir;
  for (const uint32_t version : {2u, 3u}) {
    CAPTURE(version);
    const gguf::Writer writer = every_scalar({.version = version});
    const std::vector<std::byte> bytes = writer.bytes().value_or_throw();  // outlives the File that views it
    const gguf::File in_memory = gguf::File::parse(bytes, "memory.gguf").value_or_throw();
    CHECK(in_memory.version() == version);
    CHECK(in_memory.tensors().empty());
    check_every_scalar(in_memory);

    const auto path = dir.path / (version == 2 ? "v2.gguf" : "v3.gguf");
    writer.write(path).or_throw();
    const gguf::File from_file = gguf::File::open(path).value_or_throw();
    CHECK(from_file.path() == path);
    CHECK(from_file.version() == version);
    CHECK(from_file.size() == std::filesystem::file_size(path));
    check_every_scalar(from_file);
  }
  // Versions 2 and 3 share the little-endian layout: only the version field differs.
  auto v2 = every_scalar({.version = 2}).bytes().value_or_throw(), v3 = every_scalar({.version = 3}).bytes().value_or_throw();
  REQUIRE(v2.size() == v3.size());
  CHECK(v2[4] == std::byte{2});
  v2[4] = std::byte{3};
  CHECK(v2 == v3);
  // The atomic write leaves nothing but the files themselves.
  CHECK(std::distance(std::filesystem::directory_iterator(dir.path), std::filesystem::directory_iterator()) == 2);
}

TEST_CASE("gguf round trip: arrays of every type, nested arrays, decoded lazily") {
  std::vector<MetadataValue> inner_rows;
  for (uint32_t row = 0; row < 3; ++row) {
    std::vector<MetadataValue> cells;
    for (uint32_t c = 0; c <= row; ++c) cells.push_back(MetadataValue::string(cell_name(row, c)));
    inner_rows.push_back(MetadataValue::array(ValueType::string, cells).value_or_throw());
  }
  // Three levels: an array of arrays of arrays of strings (and one empty array).
  const std::vector<MetadataValue> outer = {MetadataValue::array(ValueType::array, inner_rows).value_or_throw(),
                                            MetadataValue::array(ValueType::array, {}).value_or_throw()};
  const std::vector<MetadataValue> u16s = {MetadataValue::u16(1), MetadataValue::u16(65535)};
  const std::vector<MetadataValue> i64s = {MetadataValue::i64(-5), MetadataValue::i64(5)};
  const std::vector<MetadataValue> f64s = {MetadataValue::f64(0.25)};
  const std::vector<MetadataValue> bools = {MetadataValue::boolean(false), MetadataValue::boolean(true)};
  const std::vector<MetadataValue> u8s = {MetadataValue::u8(9)};
  const std::vector<MetadataValue> i8s = {MetadataValue::i8(-9)};
  const std::vector<MetadataValue> i16s = {MetadataValue::i16(-300)};
  const std::vector<MetadataValue> u32s = {MetadataValue::u32(70000)};
  const std::vector<MetadataValue> u64s = {MetadataValue::u64(1ull << 40)};
  const std::vector<std::string> strings = {"alpha", "", "gamma"};
  const std::vector<float> floats = {0.5f, -2.0f};
  const std::vector<int32_t> ints = {-1, 7, 1 << 30};

  gguf::Writer writer = gguf::Writer::create().value_or_throw();
  writer.add("nested", MetadataValue::array(ValueType::array, outer).value_or_throw()).or_throw();
  writer.add("u8s", MetadataValue::array(ValueType::u8, u8s).value_or_throw()).or_throw();
  writer.add("i8s", MetadataValue::array(ValueType::i8, i8s).value_or_throw()).or_throw();
  writer.add("u16s", MetadataValue::array(ValueType::u16, u16s).value_or_throw()).or_throw();
  writer.add("i16s", MetadataValue::array(ValueType::i16, i16s).value_or_throw()).or_throw();
  writer.add("u32s", MetadataValue::array(ValueType::u32, u32s).value_or_throw()).or_throw();
  writer.add("i32s", MetadataValue::i32s(ints)).or_throw();
  writer.add("f32s", MetadataValue::f32s(floats)).or_throw();
  writer.add("bools", MetadataValue::array(ValueType::boolean, bools).value_or_throw()).or_throw();
  writer.add("strings", MetadataValue::strings(strings)).or_throw();
  writer.add("u64s", MetadataValue::array(ValueType::u64, u64s).value_or_throw()).or_throw();
  writer.add("i64s", MetadataValue::array(ValueType::i64, i64s).value_or_throw()).or_throw();
  writer.add("f64s", MetadataValue::array(ValueType::f64, f64s).value_or_throw()).or_throw();
  const auto bytes = writer.bytes().value_or_throw();
  const gguf::File file = attendre::test::parse(bytes);

  const gguf::Value nested = file.get("nested").value_or_throw();
  REQUIRE(nested.type().value_or_throw() == ValueType::array);
  CHECK(nested.element_type().value_or_throw() == ValueType::array);
  REQUIRE(nested.size().value_or_throw() == 2);
  const gguf::Value rows = nested.at(0).value_or_throw();
  REQUIRE(rows.size().value_or_throw() == 3);
  for (uint64_t row = 0; row < 3; ++row) {
    const gguf::Value cells = rows.at(row).value_or_throw();
    CHECK(cells.element_type().value_or_throw() == ValueType::string);
    REQUIRE(cells.size().value_or_throw() == row + 1);
    for (uint64_t c = 0; c <= row; ++c)
      CHECK(cells.at(c).value_or_throw().as_string("cell").value_or_throw() == cell_name(row, c));
  }
  CHECK(nested.at(1).value_or_throw().size().value_or_throw() == 0);
  CHECK(nested.at(1).value_or_throw().element_type().value_or_throw() == ValueType::array);

  CHECK(file.get("u8s").value_or_throw().at(0).value_or_throw().as_u64("u8s").value_or_throw() == 9);
  CHECK(file.get("i8s").value_or_throw().at(0).value_or_throw().as_i64("i8s").value_or_throw() == -9);
  CHECK(file.get("u16s").value_or_throw().at(1).value_or_throw().as_u64("u16s").value_or_throw() == 65535);
  CHECK(file.get("i16s").value_or_throw().at(0).value_or_throw().as_i64("i16s").value_or_throw() == -300);
  CHECK(file.get("u32s").value_or_throw().at(0).value_or_throw().as_u64("u32s").value_or_throw() == 70000);
  CHECK(file.get("u64s").value_or_throw().at(0).value_or_throw().as_u64("u64s").value_or_throw() == 1ull << 40);
  CHECK(file.get("i64s").value_or_throw().at(0).value_or_throw().as_i64("i64s").value_or_throw() == -5);
  CHECK(file.get("f64s").value_or_throw().at(0).value_or_throw().as_f64("f64s").value_or_throw() == 0.25);
  CHECK_FALSE(file.get("bools").value_or_throw().at(0).value_or_throw().as_bool("bools").value_or_throw());
  CHECK(file.get("bools").value_or_throw().at(1).value_or_throw().as_bool("bools").value_or_throw());
  CHECK(file.get("strings").value_or_throw().at(2).value_or_throw().as_string("strings").value_or_throw() == "gamma");
  CHECK(file.get("strings").value_or_throw().at(1).value_or_throw().as_string("strings").value_or_throw().empty());
  CHECK(file.get_strings("strings").value_or_throw() == strings);
  CHECK(file.get_f32s("f32s").value_or_throw() == floats);
  CHECK(file.get_i32s("i32s").value_or_throw() == ints);

  // A Value keeps the bytes alive: it outlives its File when the File owns a mapping.
  attendre::test::GgufTempDir dir;
  writer.write(dir.path / "a.gguf").or_throw();
  std::optional<gguf::Value> survivor;
  {
    const gguf::File opened = gguf::File::open(dir.path / "a.gguf").value_or_throw();
    survivor = opened.get("strings").value_or_throw();
  }
  CHECK(survivor->at(0).value_or_throw().as_string("strings").value_or_throw() == "alpha");

  const gguf::Value three = file.get("strings").value_or_throw();
  check_failure(three.at(3), ErrorCode::invalid_argument,
                "x.gguf: metadata key \"strings\": index 3 is out of range (3 elements)");
  const gguf::Value inner = file.get("nested").value_or_throw().at(0).value_or_throw().at(2).value_or_throw();
  check_failure(inner.at(3), ErrorCode::invalid_argument, "metadata key \"nested[0][2]\": index 3 is out of range");
  check_failure(file.get("u8s").value_or_throw().at(0).value_or_throw().size(), ErrorCode::malformed_input,
                "metadata key \"u8s[0]\": has type uint8, not an array");
  check_failure(file.get_strings("f32s"), ErrorCode::malformed_input,
                "metadata key \"f32s\": is an array of float32, expected an array of string");
  check_failure(file.get_f32s("strings"), ErrorCode::malformed_input, "is an array of string, expected an array of float32");
  check_failure(file.get_i32s("missing"), ErrorCode::malformed_input, "metadata key \"missing\": is missing");
}

TEST_CASE("gguf typed accessors convert exactly or refuse") {
  const auto bytes = every_scalar().bytes().value_or_throw();
  const gguf::File file = attendre::test::parse(bytes);
  CHECK(file.get_u64("u8", 3).value_or_throw() == 250);    // present: the fallback is ignored...
  CHECK(file.get_u64("absent", 3).value_or_throw() == 3);  // ...absent: used
  CHECK(file.get_f64("absent", 2.5).value_or_throw() == 2.5);
  CHECK(file.get_string("absent", "x").value_or_throw() == "x");
  CHECK_FALSE(file.get_bool("absent", false).value_or_throw());
  CHECK(file.get_i64("absent", -4).value_or_throw() == -4);
  CHECK(file.get_f64("u16").value_or_throw() == 65000.0);  // an integer a double holds exactly
  CHECK(file.get_i64("u32").value_or_throw() == 4000000000);
  CHECK_FALSE(file.find("absent"));

  using attendre::test::check_error;
  const auto malformed = ErrorCode::malformed_input;
  check_failure(file.get_u64("i8"), malformed, "x.gguf: metadata key \"i8\": value -7 does not fit an unsigned integer");
  check_failure(file.get_i64("u64"), malformed, "value 18446744073709551615 does not fit int64");
  check_failure(file.get_u64("f32"), malformed, "metadata key \"f32\": has type float32, expected an unsigned integer");
  check_failure(file.get_f64("u64"), malformed, "is not exactly representable as a double");
  check_failure(file.get_f64("string"), malformed, "has type string, expected a number");
  check_failure(file.get_bool("u8"), malformed, "has type uint8, expected bool");
  check_failure(file.get_string("bool"), malformed, "has type bool, expected string");
  check_failure(file.get_u64("absent"), malformed, "metadata key \"absent\": is missing");
  check_failure(gguf::Value().type(), ErrorCode::invalid_argument, "empty Value");
}

TEST_CASE("gguf round trip: every tensor type with its block size, custom alignment") {
  for (const uint64_t alignment : {32ull, 1ull, 8ull, 64ull, 4096ull}) {
    CAPTURE(alignment);
    gguf::Writer writer = gguf::Writer::create({.alignment = alignment}).value_or_throw();
    writer.add("general.name", MetadataValue::string("all types")).or_throw();
    struct Expected {
      std::string name;
      TensorType type;
      std::vector<uint64_t> dims;
      std::vector<std::byte> data;
    };
    std::vector<Expected> expected;
    uint64_t seed = 10;
    for (uint32_t id = 0; id < 64; ++id) {
      const auto type = static_cast<TensorType>(id);
      const auto block = gguf::block_size(type);
      if (!block) continue;
      // Two rows of two blocks, the last tensor with 3 dims.
      const std::vector<uint64_t> dims = {2ull * block->elements, 2, 1};
      auto data = attendre::test::random_bytes(4ull * block->bytes, ++seed);
      expected.push_back({"t." + gguf::to_string(type), type, dims, data});
      writer.add_tensor(expected.back().name, dims, type, data).or_throw();
    }
    CHECK(expected.size() == 32);  // every type ggml defines today, MXFP4 included
    const auto bytes = writer.bytes().value_or_throw();
    const gguf::File file = attendre::test::parse(bytes);
    CHECK(file.alignment() == alignment);
    CHECK(file.data_offset() % alignment == 0);
    if (alignment != 32) CHECK(file.get_u64("general.alignment").value_or_throw() == alignment);
    REQUIRE(file.tensors().size() == expected.size());
    for (size_t i = 0; i < expected.size(); ++i) {
      const gguf::TensorInfo& info = file.tensors()[i];
      CAPTURE(info.name);
      CHECK(info.name == expected[i].name);
      CHECK(info.type == expected[i].type);
      CHECK(info.dims == expected[i].dims);
      CHECK(info.offset % alignment == 0);
      CHECK(info.elements() == 4 * gguf::block_size(info.type)->elements);
      CHECK(file.find_tensor(info.name) == &info);
      const auto data = file.data(info).value_or_throw();
      REQUIRE(data.size() == expected[i].data.size());
      CHECK(std::memcmp(data.data(), expected[i].data.data(), data.size()) == 0);
      CHECK(reinterpret_cast<uintptr_t>(data.data() - file.data_offset() - info.offset) ==
            reinterpret_cast<uintptr_t>(bytes.data()));
    }
    CHECK(file.find_tensor("absent") == nullptr);
  }
}

TEST_CASE("gguf type names and block sizes") {
  CHECK(gguf::to_string(TensorType::q4_k) == "Q4_K");
  CHECK(gguf::to_string(TensorType::bf16) == "BF16");
  CHECK(gguf::to_string(static_cast<TensorType>(31)) == "type 31");
  CHECK(gguf::to_string(ValueType::f32) == "float32");
  CHECK(gguf::to_string(static_cast<ValueType>(13)) == "type 13");
  // A few sizes ggml-common.h states outright.
  CHECK(gguf::block_size(TensorType::q4_0)->bytes == 18);
  CHECK(gguf::block_size(TensorType::q8_0)->bytes == 34);
  CHECK(gguf::block_size(TensorType::q4_k)->bytes == 144);
  CHECK(gguf::block_size(TensorType::q5_k)->bytes == 176);
  CHECK(gguf::block_size(TensorType::q6_k)->bytes == 210);
  CHECK(gguf::block_size(TensorType::q8_k)->bytes == 292);
  CHECK(gguf::block_size(TensorType::iq4_xs)->bytes == 136);
  CHECK(gguf::block_size(TensorType::tq1_0)->bytes == 54);
  CHECK(gguf::block_size(TensorType::q6_k)->elements == 256);
  CHECK_FALSE(gguf::block_size(static_cast<TensorType>(4)));  // Q4_2, removed from ggml
}

TEST_CASE("gguf writer refuses what it cannot write validly, unless told to") {
  const auto invalid = ErrorCode::invalid_argument;
  const std::vector<std::byte> four_floats(16);
  check_failure(gguf::Writer::create({.version = 1}), invalid, "version 1");
  check_failure(gguf::Writer::create({.alignment = 48}), invalid, "alignment 48 is not a power of two");
  const auto writer = [] { return gguf::Writer::create().value_or_throw(); };
  gguf::Writer keys = writer();
  REQUIRE(keys.add("a", MetadataValue::u8(1)).ok());
  check_failure(keys.add("a", MetadataValue::u8(2)), invalid, "duplicate metadata key \"a\"");
  check_failure(writer().add("general.alignment", MetadataValue::u32(64)), invalid,
                "general.alignment must be the uint32 32");
  gguf::Writer names = writer();
  REQUIRE(names.add_tensor("t", {4}, TensorType::f32, four_floats).ok());
  check_failure(names.add_tensor("t", {4}, TensorType::f32, four_floats), invalid, "duplicate tensor name \"t\"");
  check_failure(writer().add_tensor("t", {5}, TensorType::f32, four_floats), invalid,
                "16 bytes of data, the shape takes 20");
  check_failure(writer().add_tensor("t", {16}, TensorType::q8_0, four_floats), invalid,
                "row of 16 is not a multiple of the Q8_0 block of 32");
  check_failure(writer().add_tensor("t", {4, 0}, TensorType::f32, four_floats), invalid, "dimension 0");
  check_failure(writer().add_tensor("t", {1, 1, 1, 1, 4}, TensorType::f32, four_floats), invalid, "5 dimensions");
  // Readers take the tensors back to back, each padded to the alignment: no
  // other offset is written, misaligned, overlapping or leaving a gap.
  check_failure(writer().add_tensor({"t", {4}, TensorType::f32, four_floats, 7}), invalid,
                "tensor \"t\": offset 7, the layout puts it at 0");
  for (const uint64_t offset : {uint64_t{0}, uint64_t{16}, uint64_t{64}}) {
    CAPTURE(offset);
    gguf::Writer two = writer();
    REQUIRE(two.add_tensor({"a", {4}, TensorType::f32, four_floats, 0}).ok());
    check_failure(two.add_tensor({"b", {4}, TensorType::f32, four_floats, offset}), invalid,
                  "tensor \"b\": offset " + std::to_string(offset) + ", the layout puts it at 32");
  }
  gguf::Writer placed_writer = writer();
  placed_writer.add_tensor({"a", {4}, TensorType::f32, four_floats, 0}).or_throw();
  placed_writer.add_tensor({"b", {4}, TensorType::f32, four_floats, 32}).or_throw();
  const auto placed = placed_writer.bytes().value_or_throw();
  CHECK(attendre::test::parse(placed).tensors()[1].offset == 32);
  const std::vector<MetadataValue> mixed = {MetadataValue::u8(1), MetadataValue::i8(1)};
  check_failure(MetadataValue::array(ValueType::u8, mixed), invalid, "element 1 has type int8");
  // With checks off the same requests go through (the malformed tests rely on it).
  gguf::Writer unchecked = gguf::Writer::create({.version = 7, .checks = false}).value_or_throw();
  unchecked.add("a", MetadataValue::u8(1)).or_throw();
  unchecked.add("a", MetadataValue::u8(2)).or_throw();
  unchecked.add_tensor({"t", {5}, static_cast<TensorType>(31), four_floats, 7}).or_throw();
  CHECK(unchecked.bytes().value_or_throw().size() > 24);
  // And a write into a folder that does not exist fails cleanly.
  check_failure(attendre::test::tiny_model().write("/nonexistent-folder/x.gguf"), ErrorCode::io_error,
                "/nonexistent-folder/x.gguf: cannot create");
}

TEST_CASE("gguf tiny model: metadata and tensors as written") {
  const auto bytes = attendre::test::tiny_model({.version = 2}).bytes().value_or_throw();
  const gguf::File file = attendre::test::parse(bytes);
  CHECK(file.version() == 2);
  CHECK(file.alignment() == 32);
  CHECK(file.get_string("general.architecture").value_or_throw() == "llama");
  CHECK(file.get_f64("llama.rope.freq_base").value_or_throw() == 10000.0);
  CHECK(file.get_strings("tokenizer.ggml.tokens").value_or_throw().size() == 5);
  CHECK(file.get_i32s("tokenizer.ggml.token_type").value_or_throw()[0] == 2);
  REQUIRE(file.tensors().size() == 3);
  CHECK(file.tensors()[2].bytes == 68);
  CHECK(file.tensors()[1].offset == 32);  // after 32 bytes of F32 norm
  CHECK(file.tensors()[2].offset == 64);  // 24 bytes of F16, padded to 32
  CHECK(std::isfinite(file.get_f64("llama.rope.freq_base").value_or_throw()));
}
