// Special token ids from GGUF files: every tokenizer.ggml.*_token_id key the
// loader reads is refused when it names no token of the vocabulary, as
// BOS/EOS/unknown are, and a key that is present but unusable is named with
// its value, never called absent.
#include "model_fixtures.hpp"
#include "model_test_support.hpp"
#include "text/tokenizer.hpp"

#include <attendre/model.hpp>
#include <attendre/tokenizer.hpp>

#include <algorithm>

using attendre::ErrorCode;
using attendre::gguf::MetadataValue;
using attendre::test::check_error;
using attendre::test::check_failure;

namespace {

// A five-token "llama" vocabulary (BOS added by default) with `extra` keys.
std::vector<std::byte> vocabulary_with(std::initializer_list<std::pair<const char*, MetadataValue>> extra,
                                       const char* model = "llama") {
  const std::vector<std::string> tokens = {"<unk>", "<s>", "</s>", "a", "b"};
  attendre::gguf::Writer writer = attendre::gguf::Writer::create().value_or_throw();
  writer.add("tokenizer.ggml.model", MetadataValue::string(model)).or_throw();
  writer.add("tokenizer.ggml.tokens", MetadataValue::strings(tokens)).or_throw();
  for (const auto& [key, value] : extra) writer.add(key, value).or_throw();
  return writer.bytes().value_or_throw();
}

attendre::tokenizer::Pipeline tokenizer_of(const std::vector<std::byte>& bytes) {
  return attendre::tokenizer::Pipeline::from_gguf(attendre::test::parse(bytes)).value_or_throw();
}

// check_error, and the message never calls a key that is there absent.
template <class F>
void check_refused(F&& f, ErrorCode code, const std::string& needle) {
  check_error(f, code, needle);
  try {
    f();
  } catch (const attendre::Error& e) {
    CHECK_MESSAGE(std::string(e.what()).find("absent") == std::string::npos, e.what());
  }
}

// The special id keys llama.cpp reads besides BOS, EOS, unknown and padding.
const char* const kOtherKeys[] = {
    "tokenizer.ggml.eot_token_id",     "tokenizer.ggml.eom_token_id",     "tokenizer.ggml.seperator_token_id",
    "tokenizer.ggml.cls_token_id",     "tokenizer.ggml.mask_token_id",    "tokenizer.ggml.prefix_token_id",
    "tokenizer.ggml.suffix_token_id",  "tokenizer.ggml.middle_token_id",  "tokenizer.ggml.fim_pre_token_id",
    "tokenizer.ggml.fim_suf_token_id", "tokenizer.ggml.fim_mid_token_id", "tokenizer.ggml.fim_pad_token_id",
    "tokenizer.ggml.fim_rep_token_id", "tokenizer.ggml.fim_sep_token_id",
};

}  // namespace

TEST_CASE("special token ids: every id key past the vocabulary is refused, naming the key and the value") {
  for (const char* key : kOtherKeys) {
    CAPTURE(key);
    check_refused([&] { tokenizer_of(vocabulary_with({{key, MetadataValue::u32(700)}})); }, ErrorCode::malformed_input,
                  std::string("x.gguf: ") + key + " = 700 is outside the 5 tokens");
    check_refused([&] { tokenizer_of(vocabulary_with({{key, MetadataValue::u32(5)}})); }, ErrorCode::malformed_input,
                  std::string(key) + " = 5 is outside the 5 tokens");
    check_refused([&] { tokenizer_of(vocabulary_with({{key, MetadataValue::i32(-5)}})); }, ErrorCode::malformed_input,
                  std::string(key) + " = -5 is outside the 5 tokens");
    check_refused([&] { tokenizer_of(vocabulary_with({{key, MetadataValue::u64(uint64_t{1} << 32)}})); },
                  ErrorCode::malformed_input, std::string(key) + " = 4294967296 is not a token id");
    check_refused([&] { tokenizer_of(vocabulary_with({{key, MetadataValue::string("4")}})); }, ErrorCode::malformed_input,
                  std::string("metadata key \"") + key + "\": has type string, expected an unsigned integer");
    // A token of the vocabulary, and "none", are fine.
    CHECK(tokenizer_of(vocabulary_with({{key, MetadataValue::u32(4)}})).size() == 5);
    CHECK(tokenizer_of(vocabulary_with({{key, MetadataValue::u32(0xFFFFFFFFu)}})).size() == 5);
    CHECK(tokenizer_of(vocabulary_with({{key, MetadataValue::i32(-1)}})).size() == 5);
  }
}

TEST_CASE("special token ids: a present BOS or EOS key that is unusable is named with its value, not as absent") {
  const char* const bos = "tokenizer.ggml.bos_token_id";
  const char* const eos = "tokenizer.ggml.eos_token_id";
  // The two: -5 and 2^32 - 1, with add_bos on ("llama"'s default).
  check_refused([&] { tokenizer_of(vocabulary_with({{bos, MetadataValue::i32(-5)}})); }, ErrorCode::malformed_input,
                "x.gguf: tokenizer.ggml.bos_token_id = -5 is outside the 5 tokens");
  check_refused([&] { tokenizer_of(vocabulary_with({{bos, MetadataValue::u32(0xFFFFFFFFu)}})); }, ErrorCode::malformed_input,
                "x.gguf: tokenizer.ggml.add_bos_token is true but tokenizer.ggml.bos_token_id is 4294967295, which "
                "means none");
  check_refused([&] { tokenizer_of(vocabulary_with({{bos, MetadataValue::i64(-1)}})); }, ErrorCode::malformed_input,
                "tokenizer.ggml.bos_token_id is -1, which means none");
  check_refused([&] { tokenizer_of(vocabulary_with({{bos, MetadataValue::f32(1)}})); }, ErrorCode::malformed_input,
                "metadata key \"tokenizer.ggml.bos_token_id\": has type float32, expected an unsigned integer");
  check_refused([&] { tokenizer_of(vocabulary_with({{bos, MetadataValue::i64(int64_t{1} << 40)}})); },
                ErrorCode::malformed_input, "tokenizer.ggml.bos_token_id = 1099511627776 is not a token id");
  // "t5" adds EOS by default.
  check_refused([&] { tokenizer_of(vocabulary_with({{eos, MetadataValue::u32(0xFFFFFFFFu)}}, "t5")); },
                ErrorCode::malformed_input,
                "tokenizer.ggml.add_eos_token is true but tokenizer.ggml.eos_token_id is 4294967295, which means none");
  check_refused([&] { tokenizer_of(vocabulary_with({{eos, MetadataValue::i16(-5)}}, "t5")); }, ErrorCode::malformed_input,
                "tokenizer.ggml.eos_token_id = -5 is outside the 5 tokens");
  // Without add_bos, "none" is no BOS; truly absent keys still say so.
  CHECK_FALSE(tokenizer_of(vocabulary_with({{bos, MetadataValue::u32(0xFFFFFFFFu)},
                                            {"tokenizer.ggml.add_bos_token", MetadataValue::boolean(false)}}))
                  .bos());
  attendre::gguf::Writer no_bos = attendre::gguf::Writer::create().value_or_throw();
  no_bos.add("tokenizer.ggml.model", MetadataValue::string("gpt2")).or_throw();
  no_bos.add("tokenizer.ggml.tokens", MetadataValue::strings(std::vector<std::string>{"a", "b"})).or_throw();
  no_bos.add("tokenizer.ggml.merges", MetadataValue::strings(std::vector<std::string>{})).or_throw();
  no_bos.add("tokenizer.ggml.add_bos_token", MetadataValue::boolean(true)).or_throw();
  check_error([&] { tokenizer_of(no_bos.bytes().value_or_throw()); }, ErrorCode::malformed_input,
              "tokenizer.ggml.add_bos_token is true but tokenizer.ggml.bos_token_id is absent");
}

TEST_CASE("special token ids: models refuse an end of turn past the vocabulary, and stop on one inside it") {
  attendre::test::GgufTempDir dir;
  const std::filesystem::path good = attendre::test::write_fixture(dir.path, attendre::test::FixtureShape{}, 5);
  const uint32_t vocab = attendre::Model::open(good).value_or_throw().tokenizer().size();
  const std::filesystem::path path = dir.path / "eot.gguf";
  attendre::test::rewrite_gguf(good, path, {{{"tokenizer.ggml.eot_token_id", MetadataValue::u32(vocab + 400)}}});
  const std::string needle =
      "tokenizer.ggml.eot_token_id = " + std::to_string(vocab + 400) + " is outside the " + std::to_string(vocab) + " tokens";
  check_refused([&] { attendre::Model::open(path).value_or_throw(); }, ErrorCode::malformed_input, path.string() + ": " + needle);
  check_refused([&] { attendre::Tokenizer::open(path).value_or_throw(); }, ErrorCode::malformed_input, needle);
  attendre::test::rewrite_gguf(good, path, {{{"tokenizer.ggml.eot_token_id", MetadataValue::u32(3)}}});
  const auto stops = attendre::Model::open(path).value_or_throw().tokenizer().stop_tokens();
  CHECK(std::find(stops.begin(), stops.end(), 3u) != stops.end());
  attendre::test::rewrite_gguf(good, path, {{{"tokenizer.ggml.eot_token_id", MetadataValue::u32(0xFFFFFFFFu)}}});
  const auto eos_only = attendre::Model::open(path).value_or_throw().tokenizer().stop_tokens();
  CHECK(eos_only == std::vector<uint32_t>{*attendre::Model::open(path).value_or_throw().tokenizer().eos()});
}
