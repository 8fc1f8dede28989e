// Errors as values in the io layer: the try_ forms of the GGUF reader and
// writer, the reference codecs, the tokenizers and model loading fail with
// exactly the code and message their throwing forms throw, and give the
// same values on good input.
#include "gguf_test_support.hpp"
#include "model_fixtures.hpp"
#include "model_test_support.hpp"
#include "test_tokenizer_support.hpp"

#include "gguf/gguf.hpp"
#include "gguf/gguf_writer.hpp"
#include "gguf/quant.hpp"
#include "text/tokenizer.hpp"

#include <attendre/model.hpp>
#include <attendre/reading.hpp>
#include <attendre/status.hpp>
#include <attendre/tokenizer.hpp>

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
  check_same_failure(gguf::try_dequantize(gguf::TensorType::q2_k, {}),
                     [&] { (void)gguf::dequantize(gguf::TensorType::q2_k, {}); });
  CHECK(gguf::try_dequantize(gguf::TensorType::q2_k, {}).status().code() == ErrorCode::unsupported);
}

TEST_CASE("io status: tokenizer try_ forms encode as the throwing forms and fail the same way") {
  using attendre::tokenizer::EncodeOptions;
  using attendre::tokenizer::Pipeline;
  using attendre::tokenizer::Vocabulary;
  const Vocabulary vocabulary = attendre::test::tokenizer::bpe_vocabulary({{"h", "e"}, {"l", "l"}, {"he", "ll"}});
  Result<Pipeline> built = Pipeline::try_build(vocabulary);
  REQUIRE(built.ok());
  const Pipeline thrown_tokenizer(vocabulary);
  // Text that crosses the pre-tokenizer's word, digit and punctuation cuts.
  const std::string text = "hello, hello world 12345 \xC3\xA9t\xC3\xA9 !!";
  const std::vector<int32_t> ids = built->try_encode(text).value();
  CHECK(ids == thrown_tokenizer.encode(text));
  CHECK(built->try_decode(ids).value() == thrown_tokenizer.decode(ids));
  CHECK(built->try_decode(ids).value() == text);
  CHECK(built->try_piece(ids[0]).value() == thrown_tokenizer.piece(ids[0]));

  check_same_failure(built->try_encode("abc\xFF"), [&] { (void)thrown_tokenizer.encode("abc\xFF"); });
  CHECK(built->try_encode("abc\xFF").status().message() == "tokenizer: text: invalid UTF-8 at byte offset 3");
  const EncodeOptions bos{.add_bos = true};
  check_same_failure(built->try_encode("a", bos), [&] { (void)thrown_tokenizer.encode("a", bos); });
  const int32_t outside[] = {0, built->size()};
  check_same_failure(built->try_decode(outside), [&] { (void)thrown_tokenizer.decode(outside); });
  check_same_failure(built->try_piece(-1), [&] { (void)thrown_tokenizer.piece(-1); });
  check_same_failure(built->try_type(built->size()), [&] { (void)thrown_tokenizer.type(built->size()); });

  Vocabulary twice = vocabulary;
  twice.tokens.push_back(twice.tokens[5]);
  check_same_failure(Pipeline::try_build(twice), [&] { (void)Pipeline(twice); });
  // A charsmap whose root sends every byte past its one node: found when the normaliser walks it.
  Vocabulary corrupt_map = attendre::test::tokenizer::unigram_vocabulary({{"a", -1}});
  const uint32_t root = uint32_t{0x100} << 10;  // BASE 0x100
  corrupt_map.precompiled_charsmap = std::string("\x04\0\0\0", 4) + std::string(reinterpret_cast<const char*>(&root), 4);
  const Pipeline normalising = Pipeline::try_build(corrupt_map).value();
  check_same_failure(normalising.try_encode("a"), [&] { (void)normalising.encode("a"); });
  CHECK(normalising.try_encode("a").status().message() ==
        "tokenizer.ggml.precompiled_charsmap: trie index 353 is outside its 1 nodes");
  Vocabulary unknown_pre = vocabulary;
  unknown_pre.pre = "no-such-pre";
  check_same_failure(Pipeline::try_build(unknown_pre), [&] { (void)Pipeline(unknown_pre); });
  CHECK(Pipeline::try_build(unknown_pre).status().code() == ErrorCode::unsupported);
}

TEST_CASE("io status: Model::open and the public Tokenizer fail as their throwing forms and agree on a good file") {
  attendre::test::GgufTempDir dir;
  const std::filesystem::path good = attendre::test::write_fixture(dir.path, attendre::test::FixtureShape{}, 5);
  Result<Model> opened = Model::open(good);
  REQUIRE(opened.ok());
  const Model thrown_model = Model::open(good).value_or_throw();
  CHECK(opened->info().parameters == thrown_model.info().parameters);
  CHECK(opened->info().tensor_bytes == thrown_model.info().tensor_bytes);
  const MemoryPlan memory = opened->default_memory();
  CHECK(opened->stack_config(memory).value().blocks.size() == thrown_model.stack_config(memory).value_or_throw().blocks.size());
  check_same_failure(opened->encoder_decoder_config({memory, 1, 1}),
                 [&] { (void)thrown_model.encoder_decoder_config({memory, 1, 1}).value_or_throw(); });
  const attendre::Tokenizer& tokenizer = opened->tokenizer();
  const std::string text = "the tiny model reads this";
  CHECK(tokenizer.encode(text).value() == thrown_model.tokenizer().encode(text).value_or_throw());
  CHECK(attendre::Tokenizer::open(good).value().encode(text).value() == tokenizer.encode(text).value_or_throw());
  const uint32_t outside[] = {tokenizer.size()};
  check_same_failure(tokenizer.decode(outside), [&] { (void)tokenizer.decode(outside).value_or_throw(); });
  check_same_failure(tokenizer.piece(tokenizer.size()), [&] { (void)tokenizer.piece(tokenizer.size()).value_or_throw(); });
  check_same_failure(tokenizer.encode("\xC0\xAF"), [&] { (void)tokenizer.encode("\xC0\xAF").value_or_throw(); });
  // The document encoder hands over the same pieces, and fails the same way on a piece of bad UTF-8.
  std::vector<uint32_t> streamed, thrown_streamed;
  attendre::DocumentEncoder encoder(tokenizer), thrown_encoder(tokenizer);
  const auto keep = [](std::vector<uint32_t>& ids) {
    return [&ids](const attendre::DocumentEncoder::Piece& piece) {
      ids.insert(ids.end(), piece.ids.begin(), piece.ids.end());
    };
  };
  encoder.begin_part();
  REQUIRE(encoder.feed(text, keep(streamed)).ok());
  REQUIRE(encoder.end_part(keep(streamed)).ok());
  REQUIRE(encoder.end_document(keep(streamed)).ok());
  thrown_encoder.begin_part();
  thrown_encoder.feed(text, keep(thrown_streamed)).or_throw();
  thrown_encoder.end_part(keep(thrown_streamed)).or_throw();
  thrown_encoder.end_document(keep(thrown_streamed)).or_throw();
  CHECK(streamed == thrown_streamed);
  CHECK(streamed == tokenizer.encode(text, {.more_follows = true}).value_or_throw());
  encoder.begin_part();
  REQUIRE(encoder.feed("bad \xFF", keep(streamed)).ok());  // buffered: nothing encoded yet
  check_same_failure(encoder.end_part(keep(streamed)), [&] {
thrown_encoder.begin_part();
thrown_encoder.feed("bad \xFF", keep(thrown_streamed)).or_throw();
thrown_encoder.end_part(keep(thrown_streamed)).or_throw();
});

  // A vocabulary missing its tokens, an architecture attendre does not run, a cut file.
  const std::filesystem::path no_tokens = dir.path / "no-tokens.gguf";
  attendre::test::rewrite_gguf(good, no_tokens, {{{"tokenizer.ggml.tokens", std::nullopt}}, {}, {}});
  check_same_failure(Model::open(no_tokens), [&] { (void)Model::open(no_tokens).value_or_throw(); });
  check_same_failure(attendre::Tokenizer::open(no_tokens), [&] { (void)attendre::Tokenizer::open(no_tokens).value_or_throw(); });
  CHECK(attendre::Tokenizer::open(no_tokens).status().message() ==
        no_tokens.string() + ": metadata key \"tokenizer.ggml.tokens\": is missing");
  const std::filesystem::path gpt2 = dir.path / "gpt2.gguf";
  attendre::test::rewrite_gguf(good, gpt2, {{{"general.architecture", gguf::MetadataValue::string("gpt2")}}, {}, {}});
  check_same_failure(Model::open(gpt2), [&] { (void)Model::open(gpt2).value_or_throw(); });
  CHECK(Model::open(gpt2).status().code() == ErrorCode::unsupported);
  const std::string bytes = attendre::test::slurp(good);
  const std::filesystem::path cut = dir.path / "cut.gguf";
  attendre::test::write_file(cut, std::as_bytes(std::span(bytes.data(), bytes.size() / 2)));
  check_same_failure(Model::open(cut), [&] { (void)Model::open(cut).value_or_throw(); });
}

TEST_CASE("io status: the GGUF writer's try_ forms refuse as the throwing forms do") {
  check_same_failure(gguf::Writer::create({.version = 1}), [] { gguf::Writer writer({.version = 1}); });
  check_same_failure(gguf::Writer::create({.alignment = 48}), [] { gguf::Writer writer({.alignment = 48}); });
  Result<gguf::Writer> writer = gguf::Writer::create();
  REQUIRE(writer.ok());
  REQUIRE(writer->try_add("a", gguf::MetadataValue::u32(1)).ok());
  check_same_failure(writer->try_add("a", gguf::MetadataValue::u32(2)),
                     [] { gguf::Writer().add("a", gguf::MetadataValue::u32(1)).add("a", gguf::MetadataValue::u32(2)); });
  const gguf::TensorToWrite short_tensor{"t", {8}, gguf::TensorType::f32, std::vector<std::byte>(4), std::nullopt};
  check_same_failure(writer->try_add_tensor(short_tensor), [&] { gguf::Writer().add_tensor(short_tensor); });
  const gguf::MetadataValue mixed[] = {gguf::MetadataValue::u32(1), gguf::MetadataValue::string("x")};
  check_same_failure(gguf::MetadataValue::try_array(gguf::ValueType::u32, mixed),
                     [&] { (void)gguf::MetadataValue::array(gguf::ValueType::u32, mixed); });
  // A good file: the bytes agree, and the written file reads back.
  REQUIRE(writer->try_add_tensor({"t", {8}, gguf::TensorType::f32, std::vector<std::byte>(32), std::nullopt}).ok());
  gguf::Writer thrown_writer;
  thrown_writer.add("a", gguf::MetadataValue::u32(1))
      .add_tensor("t", {8}, gguf::TensorType::f32, std::vector<std::byte>(32));
  CHECK(writer->try_bytes().value() == thrown_writer.bytes());
  attendre::test::GgufTempDir dir;
  REQUIRE(writer->try_write(dir.path / "w.gguf").ok());
  CHECK(gguf::File::try_open(dir.path / "w.gguf").value().try_get_u64("a").value() == 1);
  check_same_failure(writer->try_write(dir.path / "missing" / "w.gguf"),
                     [&] { thrown_writer.write(dir.path / "missing" / "w.gguf"); });
}
