// SentencePiece's precompiled character map (tokenizer.ggml.precompiled_charsmap):
// the normalisation rules (NFKC and the model's own) compiled into a trie
// over UTF-8 bytes whose leaves point at replacement strings. Layout, as
// SentencePiece writes it and llama.cpp reads it:
//   u32 (little-endian)  byte size of the trie
//   u32[]                the trie: an XOR-compressed compact double array
//                        (Kanda 2018), one packed node per entry
//   char[]               NUL-terminated replacement strings
#pragma once

#include <attendre/status.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace attendre::tokenizer {

class PrecompiledCharsmap {
 public:
  // Fails malformed_input naming tokenizer.ggml.precompiled_charsmap when
  // the header does not fit the blob.
  static Result<PrecompiledCharsmap> parse(std::string_view blob);

  struct Match {
    std::string_view replacement;
    size_t consumed = 0;  // bytes of the input it replaces
  };
  // The rule for the longest prefix of `text` the map knows, or nullopt.
  // Fails malformed_input when the walk leaves the trie or a replacement
  // runs past the blob (a corrupt map is found when used, not before).
  Result<std::optional<Match>> longest_prefix(std::string_view text) const;
  // The same for a caller that walks character by character (the unigram
  // normaliser): no Result per call; a corrupt map there gives nullopt with
  // `corrupt` set, and longest_prefix on the same text says why.
  std::optional<Match> find(std::string_view text, bool& corrupt) const;

 private:
  PrecompiledCharsmap() = default;

  // One walk of the trie along a text: the rule found, or what is corrupt.
  struct Walk {
    enum class Fault : uint8_t { none, index_outside, offset_outside, no_nul };
    Fault fault = Fault::none;
    size_t index = 0;            // index_outside: the node index past the trie
    uint32_t offset = 0;         // offset_outside, no_nul: the replacement's offset
    std::optional<Match> match;  // when fault is none
  };
  Walk walk(std::string_view text) const;

  std::vector<uint32_t> nodes_;
  std::string replacements_;
};

}  // namespace attendre::tokenizer
