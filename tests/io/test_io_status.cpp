// Errors as values in the io layer: the try_ forms of the GGUF reader and
// the reference codecs fail with exactly the code and message their
// throwing forms throw, and give the same values on good input.
#include "gguf_test_support.hpp"

#include "io/gguf.hpp"
#include "io/quant.hpp"

#include <attendre/status.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <type_traits>
#include <vector>

using namespace attendre;
using attendre::test::tiny_model;

namespace {

// The failure `throwing` throws, as a Status (ok when it throws nothing).
template <class Throwing>
Status thrown(Throwing&& throwing) {
  try {
    throwing();
  } catch (const Error& e) {
    return {e.code(), e.what()};
  }
  return {};
}

// `outcome` (a Status or a Result) failed, with the code and message `throwing` throws.
template <class Outcome, class Throwing>
void check_same_failure(const Outcome& outcome, Throwing&& throwing) {
  const Status expected = thrown(throwing);
  REQUIRE_FALSE(expected.ok());
  const Status& status = [&]() -> const Status& {
    if constexpr (std::is_same_v<Outcome, Status>) return outcome;
    else return outcome.status();
  }();
  REQUIRE_FALSE(status.ok());
  CHECK(status.code() == expected.code());
  CHECK(status.message() == expected.message());
}

void check_same_parse_failure(const std::vector<std::byte>& bytes) {
  check_same_failure(gguf::File::try_parse(bytes, "x.gguf"), [&] { (void)gguf::File::parse(bytes, "x.gguf"); });
}

}  // namespace

TEST_CASE("io status: GGUF try_parse and try_open fail exactly as parse and open") {
  const std::vector<std::byte> valid = tiny_model().bytes();
  // Truncated at a spread of lengths through the header, metadata and tensor infos.
  for (size_t length = 0; length < valid.size(); length += 1 + length / 3)
    check_same_parse_failure(std::vector<std::byte>(valid.begin(), valid.begin() + static_cast<ptrdiff_t>(length)));
  auto bad_magic = valid;
  bad_magic[3] = std::byte{'X'};
  check_same_parse_failure(bad_magic);
  CHECK(gguf::File::try_parse(bad_magic, "x.gguf").status().message() ==
        "x.gguf: not a GGUF file (starts with bytes 47 47 55 58, expected \"GGUF\")");
  gguf::Writer unchecked(gguf::WriterOptions{.checks = false});
  unchecked.add_tensor({"t", {8}, static_cast<gguf::TensorType>(31), std::vector<std::byte>(32)});
  check_same_parse_failure(unchecked.bytes());
  CHECK(gguf::File::try_parse(unchecked.bytes(), "x.gguf").status().code() == ErrorCode::malformed_input);

  const std::filesystem::path missing = "/nonexistent/attendre/no.gguf";
  const auto opened = gguf::File::try_open(missing);
  check_same_failure(opened, [&] { (void)gguf::File::open(missing); });
  CHECK(opened.status().code() == ErrorCode::io_error);
}

TEST_CASE("io status: GGUF accessors' try_ forms give the throwing forms' values and failures") {
  const std::vector<std::byte> bytes = tiny_model().bytes();
  Result<gguf::File> parsed = gguf::File::try_parse(bytes, "x.gguf");
  REQUIRE(parsed.ok());
  const gguf::File& file = *parsed;
  const gguf::File thrown_file = gguf::File::parse(bytes, "x.gguf");
  REQUIRE(file.keys().size() == thrown_file.keys().size());
  REQUIRE(!file.tensors().empty());
  for (const std::string& key : file.keys()) {
    const gguf::Value value = file.try_get(key).value();
    const gguf::ValueType type = value.try_type().value();
    CHECK(type == thrown_file.get(key).type());
    if (type == gguf::ValueType::string) {
      CHECK(file.try_get_string(key).value() == thrown_file.get_string(key));
      check_same_failure(file.try_get_u64(key), [&] { (void)thrown_file.get_u64(key); });
    } else if (type == gguf::ValueType::array) {
      CHECK(value.try_size().value() == thrown_file.get(key).size());
      check_same_failure(value.try_at(value.try_size().value()), [&] { (void)value.at(value.size()); });
      check_same_failure(value.try_as_string(key), [&] { (void)value.as_string(key); });
    } else if (type != gguf::ValueType::boolean) {
      CHECK(file.try_get_f64(key).value() == thrown_file.get_f64(key));
      check_same_failure(value.try_size(), [&] { (void)value.size(); });
    }
  }
  check_same_failure(file.try_get("no.such.key"), [&] { (void)thrown_file.get("no.such.key"); });
  CHECK(file.try_get_u64("no.such.key", 7).value() == 7);
  check_same_failure(file.try_get_strings("general.architecture"), [&] { (void)file.get_strings("general.architecture"); });
  check_same_failure(gguf::Value().try_type(), [&] { (void)gguf::Value().type(); });
  CHECK(gguf::Value().try_type().status().code() == ErrorCode::invalid_argument);

  for (const gguf::TensorInfo& tensor : file.tensors()) {
    const auto data = file.try_data(tensor).value();
    CHECK(std::equal(data.begin(), data.end(), thrown_file.data(tensor).begin(), thrown_file.data(tensor).end()));
    CHECK(data.size() == tensor.bytes);
  }
  gguf::TensorInfo outside = file.tensors()[0];
  outside.offset = file.size();
  check_same_failure(file.try_data(outside), [&] { (void)file.data(outside); });
  CHECK(file.try_data(outside).status().code() == ErrorCode::invalid_argument);
}

TEST_CASE("io status: reference codecs' try_ forms decode as the throwing forms and fail the same way") {
  const std::vector<float> values = attendre::test::random_floats(2 * 256, 11);
  for (const gguf::TensorType type : {gguf::TensorType::f16, gguf::TensorType::q8_0, gguf::TensorType::q4_k}) {
    const std::vector<std::byte> blocks = gguf::try_quantize(type, values).value();
    CHECK(blocks == gguf::quantize(type, values));
    CHECK(gguf::try_dequantize(type, blocks).value() == gguf::dequantize(type, blocks));
    const std::vector<std::byte> cut(blocks.begin(), blocks.end() - 1);
    check_same_failure(gguf::try_dequantize(type, cut), [&] { (void)gguf::dequantize(type, cut); });
    std::vector<double> small(3);
    check_same_failure(gguf::try_dequantize(type, blocks, small), [&] { gguf::dequantize(type, blocks, small); });
    const std::vector<float> odd(values.begin(), values.end() - 1);
    if (type != gguf::TensorType::f16)
      check_same_failure(gguf::try_quantize(type, odd), [&] { (void)gguf::quantize(type, odd); });
  }
  check_same_failure(gguf::try_dequantize(gguf::TensorType::q2_k, {}), [&] { (void)gguf::dequantize(gguf::TensorType::q2_k, {}); });
  CHECK(gguf::try_dequantize(gguf::TensorType::q2_k, {}).status().code() == ErrorCode::unsupported);
}
