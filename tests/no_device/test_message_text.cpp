// Text from files in messages (core/printable.hpp): every message that quotes
// a GGUF key, string or tensor name escapes it the same way, valid UTF-8
// kept, a NUL, control characters and invalid UTF-8 as \xNN, so a message
// stays one line and survives a C string whole.
#include "gguf_test_support.hpp"
#include "core/printable.hpp"
#include "model/gguf_architecture.hpp"
#include "text/tokenizer.hpp"

#include <attendre/model.hpp>

using attendre::ErrorCode;
using attendre::printable;
using attendre::quote;
using attendre::gguf::MetadataValue;

namespace {

// A string with NULs and other bytes that a string literal would end early on.
std::string bytes(std::initializer_list<int> values) {
  std::string out;
  for (const int v : values) out += static_cast<char>(v);
  return out;
}

}  // namespace

TEST_CASE("message text: valid UTF-8 is kept, controls and invalid UTF-8 become hex escapes, a backslash is doubled") {
  CHECK(printable("blk.0.attn_q.weight") == "blk.0.attn_q.weight");
  CHECK(printable("caf\xC3\xA9 \xE2\x96\x81x \xF0\x9F\x98\x80") == "caf\xC3\xA9 \xE2\x96\x81x \xF0\x9F\x98\x80");
  CHECK(printable(bytes({'a', 0, 'b'})) == "a\\x00b");
  CHECK(printable("a\nb\r\t\x1B[2J\x7F") == "a\\x0Ab\\x0D\\x09\\x1B[2J\\x7F");
  CHECK(printable("back\\slash") == "back\\\\slash");
  // Controls outside ASCII: C1 (U+0085 ends a line in some viewers), the line
  // separator, a right-to-left override.
  CHECK(printable("a\xC2\x85" "b\xE2\x80\xA8" "c\xE2\x80\xAE" "d") == "a\\xC2\\x85b\\xE2\\x80\\xA8c\\xE2\\x80\\xAEd");
  // Invalid UTF-8, byte by byte: a stray continuation, a byte no sequence
  // starts with, an overlong '/', a surrogate, past U+10FFFF, a cut sequence.
  CHECK(printable("\x80") == "\\x80");
  CHECK(printable("\xFF\xFE") == "\\xFF\\xFE");
  CHECK(printable("\xC0\xAF") == "\\xC0\\xAF");
  CHECK(printable("\xED\xA0\x80") == "\\xED\\xA0\\x80");
  CHECK(printable("\xF4\x90\x80\x80") == "\\xF4\\x90\\x80\\x80");
  CHECK(printable("ok\xE2\x82") == "ok\\xE2\\x82");
  CHECK(printable("\xE2\x82z") == "\\xE2\\x82z");
  // Cut after `limit` bytes, never inside a character.
  CHECK(printable("abcdef", 4) == "abcd...");
  CHECK(printable("ab\xC3\xA9", 3) == "ab...");
  CHECK(printable("ab\xC3\xA9", 4) == "ab\xC3\xA9");
  CHECK(printable(std::string(100, 'x')) == std::string(80, 'x') + "...");
  // Quoted: a double quote inside is escaped too (not in printable, whose
  // callers quote with single quotes).
  CHECK(quote("say \"hi\"") == "\"say \\\"hi\\\"\"");
  CHECK(printable("say \"hi\"") == "say \"hi\"");
  CHECK(quote(bytes({'k', 0, 0xFE})) == "\"k\\x00\\xFE\"");
  // Nothing escaped holds a NUL or a line break.
  std::string every_byte;
  for (int b = 0; b < 256; ++b) every_byte += static_cast<char>(b);
  for (const std::string& text : {printable(every_byte, 1000), quote(every_byte, 1000)}) {
    CHECK(text.find('\0') == std::string::npos);
    CHECK(text.find('\n') == std::string::npos);
    CHECK(text.find('\r') == std::string::npos);
  }
}

TEST_CASE("message text: GGUF keys, tensor names and strings are escaped alike, a NUL no longer cuts the message") {
  // A key with a NUL, invalid UTF-8 and valid UTF-8, duplicated.
  const std::string key = bytes({'k', 0, 0xFE, 'e', 0xC3, 0xA9});
  auto writer = attendre::gguf::Writer::create({.checks = false}).value_or_throw();
  writer.add(key, MetadataValue::u8(1)).or_throw();
  writer.add(key, MetadataValue::u8(2)).or_throw();
  attendre::test::check_malformed(writer.bytes().value_or_throw(), "x.gguf: metadata key 1 (\"k\\x00\\xFEe\xC3\xA9\"): duplicate of metadata key 0");
  // A tensor name likewise.
  writer = attendre::gguf::Writer::create({.checks = false}).value_or_throw();
  writer.add_tensor({bytes({'t', 0, 0xFF}), {8}, attendre::gguf::TensorType::f32, std::vector<std::byte>(32), 32}).or_throw();
  attendre::test::check_malformed(writer.bytes().value_or_throw(), "x.gguf: tensor 0 (\"t\\x00\\xFF\"): data offset 32, expected 0");

  // The architecture, with a NUL: the whole message, not cut at the NUL.
  const std::vector<std::string> tokens = {"<unk>", "<s>", "</s>"};
  attendre::gguf::Writer model = attendre::gguf::Writer::create().value_or_throw();
  model.add("general.architecture", MetadataValue::string(bytes({'l', 'l', 'a', 0, 'm', 'a', 0xFF}))).or_throw();
  model.add("tokenizer.ggml.model", MetadataValue::string("llama")).or_throw();
  model.add("tokenizer.ggml.tokens", MetadataValue::strings(tokens)).or_throw();
  const std::string expected = "x.gguf: metadata key \"general.architecture\": architecture 'lla\\x00ma\\xFF' is not "
                               "supported (supported: llama, qwen2, qwen3, phi3, gemma2, gemma3, t5, t5encoder)";
  const auto parsed = model.bytes().value_or_throw();
  attendre::test::check_error([&] { attendre::gguf::describe_model(attendre::test::parse(parsed), attendre::WeightType::f32).value_or_throw(); },
                              ErrorCode::unsupported, expected);
  attendre::test::GgufTempDir dir;
  model.write(dir.path / "x.gguf").or_throw();
  attendre::test::check_error([&] { attendre::Model::open(dir.path / "x.gguf").value_or_throw(); }, ErrorCode::unsupported,
                              "architecture 'lla\\x00ma\\xFF' is not supported (supported: llama, qwen2, qwen3, phi3, gemma2, gemma3, t5, t5encoder)");

  // The tokenizer's model name: valid UTF-8 kept as in every other message.
  attendre::gguf::Writer vocabulary = attendre::gguf::Writer::create().value_or_throw();
  vocabulary.add("tokenizer.ggml.model", MetadataValue::string(bytes({'b', 0xC3, 0xA9, 'r', 't', 0, 0xFF}))).or_throw();
  vocabulary.add("tokenizer.ggml.tokens", MetadataValue::strings(tokens)).or_throw();
  const auto vocabulary_bytes = vocabulary.bytes().value_or_throw();
  attendre::test::check_error(
      [&] { attendre::tokenizer::Pipeline::from_gguf(attendre::test::parse(vocabulary_bytes)).value_or_throw(); }, ErrorCode::unsupported,
      "x.gguf: tokenizer.ggml.model 'b\xC3\xA9rt\\x00\\xFF' is not supported (llama, gpt2, t5)");
  // And a RoPE scaling type.
  attendre::gguf::Writer scaled = attendre::gguf::Writer::create().value_or_throw();
  scaled.add("general.architecture", MetadataValue::string("llama")).or_throw();
  scaled.add("llama.context_length", MetadataValue::u32(64)).or_throw();
  scaled.add("llama.embedding_length", MetadataValue::u32(64)).or_throw();
  scaled.add("llama.block_count", MetadataValue::u32(1)).or_throw();
  scaled.add("llama.feed_forward_length", MetadataValue::u32(96)).or_throw();
  scaled.add("llama.attention.head_count", MetadataValue::u32(4)).or_throw();
  scaled.add("llama.attention.layer_norm_rms_epsilon", MetadataValue::f32(1e-5f)).or_throw();
  scaled.add("llama.rope.scaling.type", MetadataValue::string(bytes({'y', 'a', 'r', 'n', '\n', 0x80}))).or_throw();
  scaled.add("tokenizer.ggml.tokens", MetadataValue::strings(tokens)).or_throw();
  const auto scaled_bytes = scaled.bytes().value_or_throw();
  attendre::test::check_error(
      [&] { attendre::gguf::describe_model(attendre::test::parse(scaled_bytes), attendre::WeightType::f32).value_or_throw(); },
      ErrorCode::unsupported, "\"llama.rope.scaling.type\": RoPE scaling 'yarn\\x0A\\x80' is not supported");
}
