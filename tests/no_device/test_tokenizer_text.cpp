// The pieces under the tokenizers: UTF-8 validation against a reference
// decoder over every short sequence, GPT-2's byte alphabet, the byte trie
// against brute force, PCRE2 splitting with Unicode classes and
// lookaheads, and the precompiled charsmap's trie walk on a hand-built map.
#include "test_tokenizer_support.hpp"
#include "text/tokenizer_charsmap.hpp"
#include "text/tokenizer_regex.hpp"
#include "text/tokenizer_trie.hpp"

#include <map>
#include <random>
#include <set>

using attendre::ErrorCode;
using attendre::test::check_error;
using attendre::test::check_failure;
using namespace attendre::tokenizer;
namespace unicode = attendre::tokenizer::unicode;

namespace {

// Validity by definition: decode the value, then require the shortest
// form, no surrogate and at most U+10FFFF.
bool reference_valid(const std::string& bytes) {
  size_t pos = 0;
  while (pos < bytes.size()) {
    const auto lead = static_cast<uint8_t>(bytes[pos]);
    size_t length = lead < 0x80 ? 1 : (lead >> 5) == 0x6 ? 2 : (lead >> 4) == 0xE ? 3 : (lead >> 3) == 0x1E ? 4 : 0;
    if (length == 0 || pos + length > bytes.size()) return false;
    uint32_t value = length == 1 ? lead : lead & (0xFFu >> (length + 1));
    for (size_t i = 1; i < length; ++i) {
      const auto byte = static_cast<uint8_t>(bytes[pos + i]);
      if ((byte & 0xC0) != 0x80) return false;
      value = (value << 6) | (byte & 0x3Fu);
    }
    const uint32_t minimum[] = {0, 0, 0x80, 0x800, 0x10000};
    if (value < minimum[length] || value > 0x10FFFF || (value >= 0xD800 && value <= 0xDFFF)) return false;
    pos += length;
  }
  return true;
}

std::vector<std::string> split(std::string_view pattern, std::string_view text) {
  std::vector<Regex> regexes;
  regexes.push_back(Regex::compile(pattern).value_or_throw());
  const std::vector<std::string_view> pieces = split_in_sequence(text, regexes).value_or_throw();
  return {pieces.begin(), pieces.end()};
}

}  // namespace

TEST_CASE("tokenizer text: UTF-8 validation agrees with the definition on every 1-3 byte sequence") {
  for (uint32_t a = 0; a < 256; ++a) {
    const std::string one(1, static_cast<char>(a));
    CHECK(unicode::first_invalid_utf8(one).has_value() == !reference_valid(one));
    for (uint32_t b = 0; b < 256; ++b) {
      const std::string two = one + static_cast<char>(b);
      REQUIRE(unicode::first_invalid_utf8(two).has_value() == !reference_valid(two));
      if (a < 0xE0 || a > 0xF4) continue;
      for (uint32_t c = 0x70; c < 0xD0; ++c) {  // around the continuation range
        const std::string three = two + static_cast<char>(c);
        REQUIRE(unicode::first_invalid_utf8(three).has_value() == !reference_valid(three));
      }
    }
  }
  // And every code point encodes to valid UTF-8 that decodes back.
  for (uint32_t code_point = 0; code_point <= 0x10FFFF; code_point += code_point < 0x3000 ? 1 : 97) {
    if (code_point >= 0xD800 && code_point <= 0xDFFF) continue;
    std::string text;
    unicode::append_utf8(text, code_point);
    size_t pos = 0;
    REQUIRE(!unicode::first_invalid_utf8(text));
    REQUIRE(unicode::next_code_point(text, pos) == code_point);
    REQUIRE(pos == text.size());
  }
}

TEST_CASE("tokenizer text: GPT-2's byte alphabet is 256 printable characters with an inverse") {
  const auto& alphabet = unicode::byte_level_alphabet();
  std::set<std::string> distinct(alphabet.begin(), alphabet.end());
  CHECK(distinct.size() == 256);
  CHECK(alphabet[' '] == "\xC4\xA0");  // 'Ġ'
  CHECK(alphabet['\n'] == "\xC4\x8A");  // 'Ċ'
  CHECK(alphabet['A'] == "A");
  std::string all_bytes, mapped;
  for (int byte = 0; byte < 256; ++byte) {
    all_bytes += static_cast<char>(byte);
    mapped += alphabet[static_cast<size_t>(byte)];
  }
  CHECK(unicode::byte_level_decode(mapped) == all_bytes);
  CHECK(unicode::byte_level_decode("\xE2\x96\x81x") == "\xE2\x96\x81x");  // outside the alphabet: kept
  CHECK(unicode::escape_spaces(" a b ") == "\xE2\x96\x81" "a\xE2\x96\x81" "b\xE2\x96\x81");
  CHECK(unicode::unescape_spaces(unicode::escape_spaces(" a  b ")) == " a  b ");
  CHECK(unicode::printable("a\n\xFF") == "a\\x0A\\xFF");
}

TEST_CASE("tokenizer text: the byte trie finds exactly the keys that prefix a text") {
  std::mt19937 rng(3);
  std::vector<std::string> keys;
  std::map<std::string, int32_t> values;
  for (int i = 0; i < 400; ++i) {
    std::string key;
    for (size_t n = 1 + rng() % 5; n > 0; --n) key += "ab\xC3\x00"[rng() % 4];
    if (values.emplace(key, i).second) keys.push_back(key);
  }
  std::vector<ByteTrie::Entry> entries;
  for (const std::string& key : keys) entries.push_back({key, values[key]});
  const ByteTrie trie(std::move(entries));
  for (int trial = 0; trial < 500; ++trial) {
    std::string text;
    for (size_t n = rng() % 8; n > 0; --n) text += "ab\xC3\x00"[rng() % 4];
    std::vector<std::pair<size_t, int32_t>> found, expected;
    trie.for_each_prefix(text, [&](size_t length, int32_t value) { found.emplace_back(length, value); });
    for (size_t length = 1; length <= text.size(); ++length)
      if (const auto hit = values.find(text.substr(0, length)); hit != values.end()) expected.emplace_back(length, hit->second);
    CAPTURE(text);
    CHECK(found == expected);
  }
}

TEST_CASE("tokenizer text: PCRE2 splits with Unicode classes, case-insensitive groups and lookaheads") {
  const std::string gpt2 = R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S))";
  CHECK(split(gpt2, "Hello world's 42  x\n") == std::vector<std::string>{"Hello", " world", "'s", " 42", " ", " x", "\n"});
  // \p{L} includes accented and CJK letters; a combining mark is not a letter.
  CHECK(split(gpt2, "na\xC3\xAFve \xE6\x97\xA5\xE6\x9C\xAC e\xCC\x81") ==
        std::vector<std::string>{"na\xC3\xAFve", " \xE6\x97\xA5\xE6\x9C\xAC", " e", "\xCC\x81"});
  const std::string llama3 = R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
  CHECK(split(llama3, "IT'S 1234567") == std::vector<std::string>{"IT", "'S", " ", "123", "456", "7"});
  CHECK(split(llama3, "a \n\n b") == std::vector<std::string>{"a", " \n\n", " b"});
  // An empty match splits without an empty piece, and nothing is lost.
  CHECK(split("(?=b)", "abab") == std::vector<std::string>{"a", "ba", "b"});
  CHECK(split("x*", "ab") == std::vector<std::string>{"a", "b"});
  CHECK(split(gpt2, "").empty());
  CHECK(Regex::compile(gpt2).value().pattern() == gpt2);
  MESSAGE("PCRE2 JIT " << std::string(Regex::compile(gpt2).value().jit() ? "in use" : "unavailable: the interpreter runs the regexes"));
  check_failure(Regex::compile("(unclosed"), ErrorCode::invalid_argument, "does not compile at offset 9");
}

TEST_CASE("tokenizer text: the charsmap trie walk on a hand-built map (\"a\" -> \"b\", \"ab\" -> \"X\")") {
  // Darts-clone's packed nodes, as SentencePiece stores them: BASE in bits
  // 10..30, a leaf-child flag in bit 8, the label in bits 0..7; a value
  // node has bit 31 set and the replacement offset below it.
  const auto node = [](uint32_t base, bool leaf, uint32_t label) { return (base << 10) | (leaf ? 1u << 8 : 0) | label; };
  const auto value = [](uint32_t offset) { return (1u << 31) | offset; };
  // The walk: index = BASE(parent) ^ byte must carry that byte as its
  // label; the unit at index ^ BASE(index) then holds the node's value (when
  // it has a leaf) and is where its children's indices start.
  std::vector<uint32_t> nodes(256, 0);
  nodes[0] = node(0x60, false, 0);      // root: the child for byte c sits at 0x60 ^ c
  nodes[0x60 ^ 'a'] = node(3, true, 'a');  // = 1; its value and children at 1 ^ 3 = 2
  nodes[2] = value(0);                  // "a" -> "b"
  nodes[2 ^ 'b'] = node(0x70, true, 'b');  // = 0x60; its value and children at 0x60 ^ 0x70 = 0x10
  nodes[0x10] = value(2);               // "ab" -> "X"
  std::string blob(4, '\0');
  const uint32_t trie_bytes = static_cast<uint32_t>(nodes.size() * 4);
  for (int i = 0; i < 4; ++i) blob[static_cast<size_t>(i)] = static_cast<char>((trie_bytes >> (8 * i)) & 0xFF);
  for (const uint32_t packed : nodes)
    for (int i = 0; i < 4; ++i) blob += static_cast<char>((packed >> (8 * i)) & 0xFF);
  blob += std::string("b\0X\0", 4);
  const PrecompiledCharsmap charsmap = PrecompiledCharsmap::parse(blob).value_or_throw();
  const auto match = [&](std::string_view text) -> std::pair<std::string, size_t> {
    const auto found = charsmap.longest_prefix(text).value_or_throw();
    if (!found) return {"none", 0};
    return {std::string(found->replacement), found->consumed};
  };
  CHECK(match("a") == std::pair<std::string, size_t>{"b", 1});
  CHECK(match("ac") == std::pair<std::string, size_t>{"b", 1});
  CHECK(match("abc") == std::pair<std::string, size_t>{"X", 2});  // the longest rule wins
  CHECK(match("b") == std::pair<std::string, size_t>{"none", 0});
  CHECK(match(std::string_view("\0a", 2)) == std::pair<std::string, size_t>{"none", 0});

  // The same map normalises a unigram vocabulary's input.
  Vocabulary vocabulary = attendre::test::tokenizer::unigram_vocabulary({{"b", -1}, {"X", -1}, {"c", -1}});
  vocabulary.precompiled_charsmap = blob;
  const Pipeline tokenizer = Pipeline::build(std::move(vocabulary)).value_or_throw();
  CHECK(tokenizer.encode("abc").value_or_throw() == tokenizer.encode("Xc").value_or_throw());
  CHECK(tokenizer.encode("ac").value_or_throw() == tokenizer.encode("bc").value_or_throw());

  // A replacement offset past the strings is found when used.
  std::string broken = blob;
  broken.resize(blob.size() - 3);  // cut "X\0" and the NUL of "b"
  const PrecompiledCharsmap corrupt = PrecompiledCharsmap::parse(broken).value_or_throw();
  check_failure(corrupt.longest_prefix("ab"), ErrorCode::malformed_input,
              "tokenizer.ggml.precompiled_charsmap: replacement offset 2 is outside its 1 bytes");
  check_failure(corrupt.longest_prefix("a"), ErrorCode::malformed_input, "has no NUL");
}
