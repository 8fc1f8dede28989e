// Malformed and hostile GGUF files: every one is refused with a one-line
// malformed_input (io_error for files that cannot be opened) naming the file,
// the field and the problem; none crashes, hangs or allocates past its size.
#include "gguf_test_support.hpp"

#include <cstring>
#include <functional>

namespace gguf = attendre::gguf;
using attendre::ErrorCode;
using attendre::test::check_error;
using attendre::test::check_failure;
using attendre::test::check_malformed;
using gguf::Encoder;
using gguf::MetadataValue;
using gguf::TensorType;

namespace {

// A file built field by field: the header, then what `body` appends.
std::vector<std::byte> file_with(uint64_t tensors, uint64_t pairs, const std::function<void(Encoder&)>& body,
                                 uint32_t version = 3) {
  Encoder out;
  out.bytes(std::as_bytes(std::span("GGUF", 4))).u32(version).u64(tensors).u64(pairs);
  body(out);
  return out.take();
}

// One key-value pair whose value is `type_id` and `payload` verbatim.
std::vector<std::byte> one_pair(const std::string& key, uint32_t type_id, const std::vector<std::byte>& payload) {
  return file_with(0, 1, [&](Encoder& out) { out.string(key).u32(type_id).bytes(payload); });
}

gguf::Writer unchecked() { return gguf::Writer::create({.checks = false}).value_or_throw(); }

const std::vector<std::byte> k32Bytes(32);  // data of an F32 tensor of 8 values

void patch_u32(std::vector<std::byte>& bytes, size_t offset, uint32_t value) { std::memcpy(&bytes[offset], &value, 4); }
void patch_u64(std::vector<std::byte>& bytes, size_t offset, uint64_t value) { std::memcpy(&bytes[offset], &value, 8); }

}  // namespace

TEST_CASE("gguf malformed: a valid file truncated at every byte offset is refused, never crashes") {
  const auto whole = attendre::test::tiny_model().bytes().value_or_throw();
  const gguf::File file = attendre::test::parse(whole);
  uint64_t data_end = 0;  // the padding after the last tensor's data is optional
  for (const gguf::TensorInfo& t : file.tensors()) data_end = std::max(data_end, file.data_offset() + t.offset + t.bytes);
  REQUIRE(data_end < whole.size());
  int refused = 0;
  for (size_t size = 0; size < whole.size(); ++size) {
    CAPTURE(size);
    const std::vector<std::byte> prefix(whole.begin(), whole.begin() + static_cast<ptrdiff_t>(size));
    if (size >= data_end) {
      CHECK(attendre::test::parse(prefix).tensors().size() == 3);
      continue;
    }
    const attendre::Result<gguf::File> cut = gguf::File::parse(prefix, "x.gguf");
    REQUIRE_MESSAGE(!cut.ok(), "a file cut at " << size << " of " << whole.size() << " bytes was accepted");
    CHECK(cut.status().code() == ErrorCode::malformed_input);
    CHECK(cut.status().message().rfind("x.gguf: ", 0) == 0);
    ++refused;
  }
  CHECK(refused == static_cast<int>(data_end));
  // The same through a mapped file, at a few sizes, and an empty file.
  attendre::test::GgufTempDir dir;
  for (const size_t size : {size_t{0}, size_t{3}, size_t{23}, size_t{100}, static_cast<size_t>(data_end - 1)}) {
    const auto path = dir.path / ("cut" + std::to_string(size) + ".gguf");
    attendre::test::write_file(path, std::span(whole).first(size));
    check_failure(gguf::File::open(path), ErrorCode::malformed_input, path.string() + ": ");
  }
  check_failure(gguf::File::open(dir.path / "cut0.gguf"), ErrorCode::malformed_input,
              "too short for a GGUF file (0 bytes)");
}

TEST_CASE("gguf malformed: files that cannot be opened are io errors") {
  attendre::test::GgufTempDir dir;
  check_failure(gguf::File::open(dir.path / "absent.gguf"), ErrorCode::io_error,
              "absent.gguf: cannot open: No such file or directory");
  check_failure(gguf::File::open(dir.path), ErrorCode::io_error, "not a regular file");
}

TEST_CASE("gguf malformed: header") {
  const auto valid = attendre::test::tiny_model().bytes().value_or_throw();
  auto bytes = valid;
  bytes[3] = std::byte{'X'};
  check_malformed(bytes, "x.gguf: not a GGUF file (starts with bytes 47 47 55 58, expected \"GGUF\")");
  check_malformed(std::vector<std::byte>(valid.begin(), valid.begin() + 3), "x.gguf: too short for a GGUF file (3 bytes)");
  check_malformed(std::vector<std::byte>(valid.begin(), valid.begin() + 6), "x.gguf: version: needs 4 bytes at offset 4, the file has 2 left");
  for (const uint32_t version : {0u, 1u, 4u, 0xFFFFFFFFu}) {
    bytes = valid;
    patch_u32(bytes, 4, version);
    check_malformed(bytes, "GGUF version " + std::to_string(version) + " is not supported (only versions 2 and 3)");
  }
  // A big-endian writer stores version 3 as bytes 00 00 00 03 (and every other field swapped too).
  bytes = valid;
  patch_u32(bytes, 4, 0x03000000u);
  check_malformed(bytes, "x.gguf: big-endian GGUF file (version field reads 3 byte-swapped): only little-endian files are supported");
}

TEST_CASE("gguf malformed: lying counts") {
  const auto valid = attendre::test::tiny_model().bytes().value_or_throw();  // 3 tensors, 7 pairs
  auto bytes = valid;
  patch_u64(bytes, 16, ~uint64_t{0});
  check_malformed(bytes, "x.gguf: metadata count 18446744073709551615 exceeds what the ");
  bytes = valid;
  patch_u64(bytes, 8, uint64_t{1} << 40);
  check_malformed(bytes, "tensor count 1099511627776 exceeds what the ");
  // Off by one: the parser runs into the next section and finds nonsense there.
  bytes = valid;
  patch_u64(bytes, 16, 8);  // the first tensor info parses as an int8 pair, the rest no longer does
  check_malformed(bytes, "x.gguf: tensor 1: string of ");
  bytes = valid;
  patch_u64(bytes, 8, 4);
  check_malformed(bytes, "x.gguf: tensor 3");
  bytes = valid;
  patch_u64(bytes, 16, 6);  // the last pair is read as a tensor info
  check_malformed(bytes, "x.gguf: tensor ");
}

TEST_CASE("gguf malformed: huge strings and arrays") {
  check_malformed(file_with(0, 1, [](Encoder& out) { out.u64(~uint64_t{0}).zeros(16); }),
                  "x.gguf: metadata key 0: string of 18446744073709551615 bytes exceeds the 16 bytes left in the file");
  check_malformed(one_pair("s", 8, Encoder().u64(uint64_t{1} << 62).bytes(std::vector<std::byte>(5)).take()),
                  "x.gguf: metadata key 0 (\"s\"): string of 4611686018427387904 bytes exceeds the 5 bytes left in the file");
  // The example of the issue, to the byte: key 3, 1024 bytes after the count.
  const auto vocabulary = file_with(0, 4, [](Encoder& out) {
    for (const char* key : {"a", "b", "c"}) out.string(key).u32(4).u32(1);
    out.string("tokenizer.ggml.tokens").u32(9).u32(8).u64(4294967295u).zeros(1024);
  });
  check_malformed(vocabulary, "x.gguf: metadata key 3 (\"tokenizer.ggml.tokens\"): array of 4294967295 strings exceeds "
                              "the 1024 bytes left in the file");
  check_malformed(one_pair("u", 9, Encoder().u32(4).u64(3).zeros(11).take()),
                  "metadata key 0 (\"u\"): array of 3 uint32 values exceeds the 11 bytes left in the file");
  check_malformed(one_pair("n", 9, Encoder().u32(9).u64(uint64_t{1} << 60).zeros(100).take()),
                  "array of 1152921504606846976 arrays exceeds the 100 bytes left in the file");
  // A count that fits the bytes left, with a string inside that does not.
  check_malformed(one_pair("t", 9, Encoder().u32(8).u64(2).string("ok").u64(1000).zeros(8).take()),
                  "metadata key 0 (\"t\"): element 1: string of 1000 bytes exceeds the 8 bytes left in the file");
  // A key of 2^63 bytes with a file of 40.
  check_malformed(file_with(0, 1, [](Encoder& out) { out.u64(uint64_t{1} << 63).zeros(16); }),
                  "metadata key 0: string of 9223372036854775808 bytes exceeds the 16 bytes left in the file");
}

TEST_CASE("gguf malformed: nesting is bounded") {
  const auto nested = [](uint32_t levels) {
    // `levels` arrays, each holding the next; the innermost holds one u8.
    Encoder inner;
    inner.u32(0).u64(1).scalar(uint8_t{7});
    std::vector<std::byte> payload = inner.take();
    for (uint32_t level = 1; level < levels; ++level) payload = Encoder().u32(9).u64(1).bytes(payload).take();
    return one_pair("deep", 9, payload);
  };
  const auto deepest = nested(gguf::kMaxArrayNesting);
  const gguf::File file = attendre::test::parse(deepest);
  gguf::Value value = file.get("deep").value_or_throw();
  for (uint32_t level = 1; level < gguf::kMaxArrayNesting; ++level) value = value.at(0).value_or_throw();
  CHECK(value.at(0).value_or_throw().as_u64("deep").value_or_throw() == 7);
  check_malformed(nested(gguf::kMaxArrayNesting + 1), "arrays nested more than 16 levels deep");
  check_malformed(nested(1000), "arrays nested more than 16 levels deep");
}

TEST_CASE("gguf malformed: unknown value types, bad bools, duplicate keys") {
  check_malformed(one_pair("k", 13, {}), "x.gguf: metadata key 0 (\"k\"): unknown value type 13");
  check_malformed(one_pair("k", 0xFFFFFFFFu, std::vector<std::byte>(64)), "unknown value type 4294967295");
  check_malformed(one_pair("k", 9, Encoder().u32(99).u64(1).zeros(8).take()), "array of unknown value type 99");
  check_malformed(one_pair("b", 7, {std::byte{2}}), "metadata key 0 (\"b\"): bool byte 2 is neither 0 nor 1");
  check_malformed(one_pair("b", 9, Encoder().u32(7).u64(3).scalar(uint8_t{1}).scalar(uint8_t{0}).scalar(uint8_t{9}).take()),
                  "metadata key 0 (\"b\"): element 2: bool byte 9 is neither 0 nor 1");
  check_malformed(one_pair("k", 4, {std::byte{1}}), "metadata key 0 (\"k\"): needs 4 bytes at offset");

  auto writer = unchecked();
  writer.add("a", MetadataValue::u8(1)).or_throw();
  writer.add("b", MetadataValue::u8(2)).or_throw();
  writer.add("a", MetadataValue::string("again")).or_throw();
  check_malformed(writer.bytes().value_or_throw(), "x.gguf: metadata key 2 (\"a\"): duplicate of metadata key 0");
  // A hostile key cannot break the one-line message.
  writer = unchecked();
  writer.add("bad\nkey\"", MetadataValue::u8(1)).or_throw();
  writer.add("bad\nkey\"", MetadataValue::u8(1)).or_throw();
  check_malformed(writer.bytes().value_or_throw(), "(\"bad\\x0Akey\\\"\"): duplicate");
}

TEST_CASE("gguf malformed: general.alignment") {
  for (const uint32_t alignment : {0u, 48u, 3u}) {
    auto writer = unchecked();
    writer.add("general.alignment", MetadataValue::u32(alignment)).or_throw();
    check_malformed(writer.bytes().value_or_throw(), "x.gguf: metadata key \"general.alignment\": " + std::to_string(alignment) +
                                        " is not a nonzero power of two");
  }
  auto writer = unchecked();
  writer.add("general.alignment", MetadataValue::string("32")).or_throw();
  check_malformed(writer.bytes().value_or_throw(), "metadata key \"general.alignment\": has type string, expected an unsigned integer");
  // 2^63 is a power of two: accepted, and the data section then lies past any file.
  writer = unchecked();
  writer.add("general.alignment", MetadataValue::u64(uint64_t{1} << 63)).or_throw();
  writer.add_tensor("t", {8}, TensorType::f32, k32Bytes).or_throw();
  check_malformed(writer.bytes().value_or_throw(), "tensor 0 (\"t\"): 32 bytes of data at offset 0 extend past the end of the file");
}

TEST_CASE("gguf malformed: tensor infos") {
  const auto tensor = [](gguf::TensorToWrite t) {
    auto writer = unchecked();
    writer.add_tensor(std::move(t)).or_throw();
    return writer.bytes().value_or_throw();
  };
  check_malformed(tensor({"t", {8}, static_cast<TensorType>(31), k32Bytes}),
                  "x.gguf: tensor 0 (\"t\"): unknown tensor type 31");
  check_malformed(tensor({"t", {8}, static_cast<TensorType>(4000000000u), k32Bytes}), "unknown tensor type 4000000000");
  check_malformed(tensor({"t", {8, 0}, TensorType::f32, k32Bytes}), "tensor 0 (\"t\"): dimension 1 is 0");
  check_malformed(tensor({"t", {1, 1, 1, 1, 8}, TensorType::f32, k32Bytes}), "has 5 dimensions, more than 4");
  check_malformed(tensor({"t", {uint64_t{1} << 32, uint64_t{1} << 32}, TensorType::f32, k32Bytes}),
                  "element count of dims [4294967296, 4294967296] overflows int64");
  check_malformed(tensor({"t", {uint64_t{1} << 31, uint64_t{1} << 31}, TensorType::f64, k32Bytes}),
                  "data size of dims [2147483648, 2147483648] overflows");
  check_malformed(tensor({"t", {16, 2}, TensorType::q8_0, k32Bytes}),
                  "tensor 0 (\"t\"): row of 16 elements is not a multiple of the Q8_0 block of 32");
  check_malformed(tensor({"t", {100}, TensorType::q6_k, k32Bytes}), "row of 100 elements is not a multiple of the Q6_K block of 256");
  check_malformed(tensor({"t", {8}, TensorType::f32, k32Bytes, 8}),
                  "tensor 0 (\"t\"): data offset 8, expected 0 (tensors follow each other in the order of their "
                  "infos, each padded to the alignment 32)");
  check_malformed(tensor({"t", {1u << 20}, TensorType::f32, k32Bytes}),
                  "tensor 0 (\"t\"): 4194304 bytes of data at offset 0 extend past the end of the file");
  // Offsets too large to write data at are patched into a one-tensor file:
  // header (24 bytes), name "t" (9), n_dims (4), one dim (8), type (4), then the offset.
  auto far = tensor({"t", {8}, TensorType::f32, k32Bytes});
  patch_u64(far, 24 + 9 + 4 + 8 + 4, uint64_t{1} << 63);
  check_malformed(far, "tensor 0 (\"t\"): data offset 9223372036854775808, expected 0");
  patch_u64(far, 24 + 9 + 4 + 8 + 4, ~uint64_t{31});
  check_malformed(far, "tensor 0 (\"t\"): data offset 18446744073709551584, expected 0");
  // A name that runs past the file, and one of 2^64 - 1 bytes.
  check_malformed(file_with(1, 0, [](Encoder& out) { out.u64(30).zeros(20); }),
                  "x.gguf: tensor 0: string of 30 bytes exceeds the 20 bytes left in the file");
  check_malformed(file_with(1, 0, [](Encoder& out) { out.u64(~uint64_t{0}).zeros(40); }),
                  "tensor 0: string of 18446744073709551615 bytes exceeds the 40 bytes left in the file");

  auto writer = unchecked();
  writer.add_tensor("t", {8}, TensorType::f32, k32Bytes).or_throw();
  writer.add_tensor("u", {8}, TensorType::f32, k32Bytes).or_throw();
  writer.add_tensor("t", {8}, TensorType::f32, k32Bytes).or_throw();
  check_malformed(writer.bytes().value_or_throw(), "x.gguf: tensor 2 (\"t\"): duplicate tensor name (also tensor 0)");

}

TEST_CASE("gguf malformed: tensor data not laid out back to back in info order, each padded to the alignment") {
  // The file: an F32 tensor whose type field says Q8_0 takes 34
  // bytes by its type and 128 in the file, and the next tensor starts after
  // the 128: a gap, which llama.cpp's reader refuses.
  auto writer = unchecked();
  writer.add_tensor({"relabelled", {32}, TensorType::q8_0, std::vector<std::byte>(128), std::nullopt}).or_throw();
  writer.add_tensor({"next", {8}, TensorType::f32, k32Bytes, std::nullopt}).or_throw();
  check_malformed(writer.bytes().value_or_throw(), "x.gguf: tensor 1 (\"next\"): data offset 128, expected 64 (tensors follow each "
                                  "other in the order of their infos, each padded to the alignment 32)");
  writer = unchecked();  // a gap after a tensor of the right size
  writer.add_tensor({"a", {8}, TensorType::f32, k32Bytes, 0}).or_throw();
  writer.add_tensor({"b", {8}, TensorType::f32, k32Bytes, 64}).or_throw();
  check_malformed(writer.bytes().value_or_throw(), "x.gguf: tensor 1 (\"b\"): data offset 64, expected 32");
  writer = unchecked();  // a gap before the first tensor
  writer.add_tensor({"a", {8}, TensorType::f32, k32Bytes, 32}).or_throw();
  check_malformed(writer.bytes().value_or_throw(), "x.gguf: tensor 0 (\"a\"): data offset 32, expected 0");
  writer = unchecked();  // overlapping
  writer.add_tensor({"a", {16}, TensorType::f32, std::vector<std::byte>(64), 0}).or_throw();
  writer.add_tensor({"b", {8}, TensorType::f32, k32Bytes, 32}).or_throw();
  check_malformed(writer.bytes().value_or_throw(), "x.gguf: tensor 1 (\"b\"): data offset 32, expected 64");
  writer = unchecked();  // two tensors at one offset
  writer.add_tensor({"x", {8}, TensorType::f32, k32Bytes, 0}).or_throw();
  writer.add_tensor({"y", {8}, TensorType::f32, k32Bytes, 0}).or_throw();
  check_malformed(writer.bytes().value_or_throw(), "tensor 1 (\"y\"): data offset 0, expected 32");
  writer = unchecked();  // apart and aligned, but listed out of order
  writer.add_tensor({"late", {8}, TensorType::f32, k32Bytes, 32}).or_throw();
  writer.add_tensor({"early", {8}, TensorType::f32, k32Bytes, 0}).or_throw();
  check_malformed(writer.bytes().value_or_throw(), "tensor 0 (\"late\"): data offset 32, expected 0");
  // Padding counts in the file's alignment: 8 values of F16 (16 bytes) take
  // 64 bytes under general.alignment 64, so the next tensor is at 64, not 16 or 32.
  for (const uint64_t offset : {uint64_t{16}, uint64_t{32}}) {
    writer = gguf::Writer::create({.alignment = 64, .checks = false}).value_or_throw();
    writer.add_tensor({"half", {8}, TensorType::f16, std::vector<std::byte>(16), 0}).or_throw();
    writer.add_tensor({"next", {8}, TensorType::f32, k32Bytes, offset}).or_throw();
    check_malformed(writer.bytes().value_or_throw(), "tensor 1 (\"next\"): data offset " + std::to_string(offset) +
                                        ", expected 64 (tensors follow each other in the order of their infos, each "
                                        "padded to the alignment 64)");
  }
  writer = gguf::Writer::create({.alignment = 64}).value_or_throw();
  writer.add_tensor("half", {8}, TensorType::f16, std::vector<std::byte>(16)).or_throw();
  writer.add_tensor("next", {8}, TensorType::f32, k32Bytes).or_throw();
  const std::vector<std::byte> bytes = writer.bytes().value_or_throw();  // outlives the File that views it
  const gguf::File file = attendre::test::parse(bytes);
  CHECK(file.tensors()[1].offset == 64);
}

TEST_CASE("gguf malformed: out-of-file tensor data through a cut data section") {
  auto bytes = attendre::test::tiny_model().bytes().value_or_throw();
  const gguf::File file = attendre::test::parse(bytes);
  const gguf::TensorInfo last = file.tensors().back();
  bytes.resize(file.data_offset() + last.offset + last.bytes - 1);
  check_malformed(bytes, "x.gguf: tensor 2 (\"proj\"): 68 bytes of data at offset 64 extend past the end of the file "
                         "(the data section holds 131 bytes from file offset");
  // And a TensorInfo edited by the caller is refused by data().
  gguf::TensorInfo edited = file.tensors()[0];
  edited.bytes = 1u << 30;
  check_failure(file.data(edited), ErrorCode::invalid_argument, "is outside the data section");
}
