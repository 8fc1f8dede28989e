// Errors as values in the io layer: the GGUF reader, the reference codecs,
// the tokenizers and model loading return Result/Status (they have no
// throwing form), each failure with its code and a one-line message naming
// what is wrong, and the values they give on good input are the ones written.
// The writer's refusals are checked in test_gguf_roundtrip.cpp ("gguf writer
// refuses what it cannot write validly"), the codecs' in test_quant.cpp, the
// tokenizers' in test_tokenizer_errors.cpp; here each layer once, end to end.
#include "gguf_test_support.hpp"
#include "model_fixtures.hpp"
#include "model_test_support.hpp"
#include "test_tokenizer_support.hpp"

#include "core/half.hpp"
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
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

using namespace attendre;
using attendre::test::check_failure;
using attendre::test::tiny_model;

TEST_CASE("io status: GGUF parse and open fail as values naming the file") {
  const std::vector<std::byte> valid = tiny_model().bytes().value_or_throw();
  REQUIRE(gguf::File::parse(valid, "x.gguf").ok());
  // Truncated at a spread of lengths through the header, metadata and tensor infos.
  for (size_t length = 0; length < valid.size(); length += 1 + length / 3) {
    CAPTURE(length);
    const std::vector<std::byte> cut(valid.begin(), valid.begin() + static_cast<ptrdiff_t>(length));
    check_failure(gguf::File::parse(cut, "x.gguf"), ErrorCode::malformed_input, "x.gguf: ");
  }
  auto bad_magic = valid;
  bad_magic[3] = std::byte{'X'};
  CHECK(gguf::File::parse(bad_magic, "x.gguf").status().message() ==
        "x.gguf: not a GGUF file (starts with bytes 47 47 55 58, expected \"GGUF\")");
  gguf::Writer unchecked = gguf::Writer::create({.checks = false}).value_or_throw();
  unchecked.add_tensor({"t", {8}, static_cast<gguf::TensorType>(31), std::vector<std::byte>(32)}).or_throw();
  check_failure(gguf::File::parse(unchecked.bytes().value_or_throw(), "x.gguf"), ErrorCode::malformed_input,
                "x.gguf: tensor 0 (\"t\"): ");

  const std::filesystem::path missing = "/nonexistent/attendre/no.gguf";
  check_failure(gguf::File::open(missing), ErrorCode::io_error, missing.string() + ": cannot open");
}

TEST_CASE("io status: GGUF accessors give the written values and fail naming the key") {
  const std::vector<std::byte> bytes = tiny_model().bytes().value_or_throw();
  const gguf::File file = gguf::File::parse(bytes, "x.gguf").value_or_throw();
  CHECK(file.get_string("general.architecture").value() == "llama");
  CHECK(file.get_u64("llama.embedding_length").value() == 64);
  CHECK(file.get_f64("llama.rope.freq_base").value() == 10000.0);
  CHECK(file.get_bool("tokenizer.ggml.add_bos_token").value());
  CHECK(file.get_strings("tokenizer.ggml.tokens").value() == std::vector<std::string>{"<unk>", "<s>", "</s>", "a", "b"});
  CHECK(file.get_f32s("tokenizer.ggml.scores").value() == std::vector<float>{0, 0, 0, -1.5f, -2.5f});
  const gguf::Value types = file.get("tokenizer.ggml.token_type").value();
  CHECK(types.type().value() == gguf::ValueType::array);
  CHECK(types.element_type().value() == gguf::ValueType::i32);
  REQUIRE(types.size().value() == 5);
  CHECK(types.at(0).value().as_i64("type 0").value() == 2);
  check_failure(types.at(5), ErrorCode::invalid_argument, "5");
  check_failure(types.as_string("tokenizer.ggml.token_type"), ErrorCode::malformed_input, "tokenizer.ggml.token_type");
  check_failure(file.get_u64("general.architecture"), ErrorCode::malformed_input, "general.architecture");
  check_failure(file.get_strings("general.architecture"), ErrorCode::malformed_input, "general.architecture");
  check_failure(file.get("no.such.key"), ErrorCode::malformed_input, "\"no.such.key\": is missing");
  CHECK(file.get_u64("no.such.key", 7).value() == 7);
  check_failure(file.get("llama.embedding_length").value().size(), ErrorCode::malformed_input, "");
  check_failure(gguf::Value().type(), ErrorCode::invalid_argument, "");

  // Tensor data are the bytes written, in place.
  REQUIRE(file.tensors().size() == 3);
  const std::vector<std::byte> norm = attendre::test::f32_bytes(attendre::test::random_floats(8, 1));
  const std::vector<std::byte> proj = attendre::test::random_bytes(2 * 34, 3);
  const auto norm_data = file.data(file.tensors()[0]).value();
  const auto proj_data = file.data(file.tensors()[2]).value();
  CHECK(std::equal(norm_data.begin(), norm_data.end(), norm.begin(), norm.end()));
  CHECK(std::equal(proj_data.begin(), proj_data.end(), proj.begin(), proj.end()));
  CHECK(norm_data.data() >= bytes.data());
  CHECK(norm_data.data() + norm_data.size() <= bytes.data() + bytes.size());
  gguf::TensorInfo outside = file.tensors()[0];
  outside.offset = file.size();
  check_failure(file.data(outside), ErrorCode::invalid_argument, "norm");
}

TEST_CASE("io status: reference codecs decode what they encode and refuse as values") {
  const std::vector<float> values = attendre::test::random_floats(2 * 256, 11);
  for (const gguf::TensorType type : {gguf::TensorType::f16, gguf::TensorType::q8_0, gguf::TensorType::q4_k}) {
    CAPTURE(gguf::to_string(type));
    const std::vector<std::byte> blocks = gguf::quantize(type, values).value();
    const std::vector<double> decoded = gguf::dequantize(type, blocks).value();
    REQUIRE(decoded.size() == values.size());
    // F16 is exact to its rounding; Q8_0 within about max/127 of unit normals, Q4_K within about max/15.
    double worst = 0;
    for (size_t i = 0; i < values.size(); ++i) {
      const double expected = type == gguf::TensorType::f16 ? half::half_to_float(half::float_to_half(values[i])) : values[i];
      worst = std::max(worst, std::abs(decoded[i] - expected));
    }
    CHECK(worst <= (type == gguf::TensorType::f16 ? 0.0 : type == gguf::TensorType::q8_0 ? 0.05 : 0.3));
    // The in-place form gives the same values.
    std::vector<double> in_place(values.size());
    REQUIRE(gguf::dequantize(type, blocks, in_place).ok());
    CHECK(in_place == decoded);
    const std::vector<std::byte> cut(blocks.begin(), blocks.end() - 1);
    check_failure(gguf::dequantize(type, cut), ErrorCode::malformed_input, "not a whole number of");
    std::vector<double> small(3);
    check_failure(gguf::dequantize(type, blocks, small), ErrorCode::invalid_argument, "the output has room for 3");
    const std::vector<float> odd(values.begin(), values.end() - 1);
    if (type != gguf::TensorType::f16)
      check_failure(gguf::quantize(type, odd), ErrorCode::invalid_argument, "511 values are not a whole number");
  }
  check_failure(gguf::dequantize(gguf::TensorType::q2_k, {}), ErrorCode::unsupported, "no reference codec for Q2_K");
}

TEST_CASE("io status: a tokenizer encodes and decodes as values and refuses naming the problem") {
  using attendre::tokenizer::EncodeOptions;
  using attendre::tokenizer::Pipeline;
  using attendre::tokenizer::Vocabulary;
  const Vocabulary vocabulary = attendre::test::tokenizer::bpe_vocabulary({{"h", "e"}, {"l", "l"}, {"he", "ll"}});
  const Pipeline built = Pipeline::build(vocabulary).value();
  // Text that crosses the pre-tokenizer's word, digit and punctuation cuts.
  const std::string text = "hello, hello world 12345 \xC3\xA9t\xC3\xA9 !!";
  const std::vector<int32_t> ids = built.encode(text).value();
  CHECK(built.decode(ids).value() == text);
  // The merges apply: "hell" is one token, the text of its id.
  const std::optional<int32_t> hell = built.find("hell");  // ASCII letters are their own byte-level characters
  REQUIRE(hell);
  CHECK(ids[0] == *hell);
  CHECK(built.piece(ids[0]).value() == "hell");

  check_failure(built.encode("abc\xFF"), ErrorCode::invalid_argument, "tokenizer: text: invalid UTF-8 at byte offset 3");
  check_failure(built.encode("a", EncodeOptions{.add_bos = true}), ErrorCode::invalid_argument, "BOS asked for");
  const int32_t outside[] = {0, built.size()};
  check_failure(built.decode(outside), ErrorCode::invalid_argument,
                "id " + std::to_string(built.size()) + " at position 1 is outside");
  check_failure(built.piece(-1), ErrorCode::invalid_argument, "id -1 is outside");
  check_failure(built.type(built.size()), ErrorCode::invalid_argument, "is outside");

  Vocabulary twice = vocabulary;
  twice.tokens.push_back(twice.tokens[5]);
  check_failure(Pipeline::build(twice), ErrorCode::malformed_input, "tokenizer.ggml.tokens");
  // A charsmap whose root sends every byte past its one node: found when the normaliser walks it.
  Vocabulary corrupt_map = attendre::test::tokenizer::unigram_vocabulary({{"a", -1}});
  const uint32_t root = uint32_t{0x100} << 10;  // BASE 0x100
  corrupt_map.precompiled_charsmap = std::string("\x04\0\0\0", 4) + std::string(reinterpret_cast<const char*>(&root), 4);
  const Pipeline normalising = Pipeline::build(corrupt_map).value();
  CHECK(normalising.encode("a").status().message() ==
        "tokenizer.ggml.precompiled_charsmap: trie index 353 is outside its 1 nodes");
  Vocabulary unknown_pre = vocabulary;
  unknown_pre.pre = "no-such-pre";
  check_failure(Pipeline::build(unknown_pre), ErrorCode::unsupported, "tokenizer.ggml.pre 'no-such-pre'");
}

TEST_CASE("io status: Model::open and the public Tokenizer refuse bad files as values and agree on a good one") {
  attendre::test::GgufTempDir dir;
  const std::filesystem::path good = attendre::test::write_fixture(dir.path, attendre::test::FixtureShape{}, 5);
  const Model model = Model::open(good).value();
  const attendre::Tokenizer& tokenizer = model.tokenizer();
  const std::string text = "the tiny model reads this";
  const std::vector<uint32_t> ids = tokenizer.encode(text).value();
  CHECK(!ids.empty());
  CHECK(attendre::Tokenizer::open(good).value().encode(text).value() == ids);
  const uint32_t outside[] = {tokenizer.size()};
  const std::string past_end = "token id " + std::to_string(tokenizer.size()) + " is out of range";
  check_failure(tokenizer.decode(outside), ErrorCode::invalid_argument, past_end);
  check_failure(tokenizer.piece(tokenizer.size()), ErrorCode::invalid_argument, past_end);
  check_failure(tokenizer.encode("\xC0\xAF"), ErrorCode::invalid_argument, "invalid UTF-8 at byte offset 0");
  // The document encoder hands over the pieces encode() gives, and fails on a piece of bad UTF-8.
  std::vector<uint32_t> streamed;
  const auto keep = [&streamed](const attendre::DocumentEncoder::Piece& piece) {
    streamed.insert(streamed.end(), piece.ids.begin(), piece.ids.end());
  };
  attendre::DocumentEncoder encoder(tokenizer);
  encoder.begin_part();
  REQUIRE(encoder.feed(text, keep).ok());
  REQUIRE(encoder.end_part(keep).ok());
  REQUIRE(encoder.end_document(keep).ok());
  CHECK(streamed == tokenizer.encode(text, {.more_follows = true}).value());
  encoder.begin_part();
  REQUIRE(encoder.feed("bad \xFF", keep).ok());  // buffered: nothing encoded yet
  check_failure(encoder.end_part(keep), ErrorCode::invalid_argument, "invalid UTF-8");

  // A vocabulary missing its tokens, an architecture attendre does not run, a cut file.
  const std::filesystem::path no_tokens = dir.path / "no-tokens.gguf";
  attendre::test::rewrite_gguf(good, no_tokens, {{{"tokenizer.ggml.tokens", std::nullopt}}, {}, {}});
  const std::string missing_tokens = no_tokens.string() + ": metadata key \"tokenizer.ggml.tokens\": is missing";
  CHECK(attendre::Tokenizer::open(no_tokens).status().message() == missing_tokens);
  check_failure(Model::open(no_tokens), ErrorCode::malformed_input, missing_tokens);
  const std::filesystem::path gpt2 = dir.path / "gpt2.gguf";
  attendre::test::rewrite_gguf(good, gpt2, {{{"general.architecture", gguf::MetadataValue::string("gpt2")}}, {}, {}});
  check_failure(Model::open(gpt2), ErrorCode::unsupported, gpt2.string() + ": ");
  const std::string bytes = attendre::test::slurp(good);
  const std::filesystem::path cut = dir.path / "cut.gguf";
  attendre::test::write_file(cut, std::as_bytes(std::span(bytes.data(), bytes.size() / 2)));
  check_failure(Model::open(cut), ErrorCode::malformed_input, cut.string() + ": ");
}
