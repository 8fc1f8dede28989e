#include "core/try.hpp"
#include "io/tokenizer_charsmap.hpp"

#include <attendre/error.hpp>

#include <cstring>

namespace attendre::tokenizer {
namespace {

constexpr std::string_view kKey = "tokenizer.ggml.precompiled_charsmap";

Status malformed(const std::string& problem) { return malformed_input(std::string(kKey) + ": " + problem); }

uint32_t read_u32(std::string_view bytes, size_t offset) {
  uint8_t raw[4];
  std::memcpy(raw, bytes.data() + offset, 4);
  return uint32_t{raw[0]} | uint32_t{raw[1]} << 8 | uint32_t{raw[2]} << 16 | uint32_t{raw[3]} << 24;
}

// The fields of a packed node (Darts-clone's layout, which SentencePiece uses):
// bits 10..30 the BASE offset (shifted left by 8 more when bit 9 is set),
// bit 8 whether the node has a leaf child, bits 0..7 and 31 the label check,
// and, in a leaf, bits 0..30 the value (an offset into the replacements).
uint32_t base(uint32_t packed) { return (packed >> 10) << ((packed & (1u << 9)) >> 6); }
uint32_t label_check(uint32_t packed) { return packed & ((1u << 31) | 0xFFu); }
bool has_leaf(uint32_t packed) { return ((packed >> 8) & 1u) != 0; }
uint32_t value(uint32_t packed) { return packed & ((1u << 31) - 1); }

}  // namespace

Result<PrecompiledCharsmap> PrecompiledCharsmap::parse(std::string_view blob) {
  if (blob.size() < 4) return malformed("is " + std::to_string(blob.size()) + " bytes, too short for its header");
  const uint32_t trie_bytes = read_u32(blob, 0);
  if (uint64_t{trie_bytes} + 4 > blob.size())
    return malformed("trie of " + std::to_string(trie_bytes) + " bytes exceeds the " +
                     std::to_string(blob.size() - 4) + " bytes after the header");
  PrecompiledCharsmap map;
  map.nodes_.resize(trie_bytes / 4);
  for (size_t i = 0; i < map.nodes_.size(); ++i) map.nodes_[i] = read_u32(blob, 4 + 4 * i);
  map.replacements_ = std::string(blob.substr(4 + size_t{trie_bytes}));
  return map;
}

std::optional<uint32_t> PrecompiledCharsmap::node(size_t index) const {
  if (index >= nodes_.size()) return std::nullopt;
  return nodes_[index];
}

Result<std::optional<PrecompiledCharsmap::Match>> PrecompiledCharsmap::try_longest_prefix(std::string_view text) const {
  using Found = std::optional<Match>;
  if (nodes_.empty()) return Found();
  const auto outside = [&](size_t index) {
    return malformed("trie index " + std::to_string(index) + " is outside its " + std::to_string(nodes_.size()) +
                     " nodes");
  };
  size_t longest = 0;
  uint32_t replacement_offset = 0;
  uint32_t index = base(nodes_[0]);
  for (size_t i = 0; i < text.size(); ++i) {
    const auto byte = static_cast<uint8_t>(text[i]);
    if (byte == 0) break;  // the keys are C strings
    index ^= byte;
    const std::optional<uint32_t> packed = node(index);
    if (!packed) return outside(index);
    if (label_check(*packed) != byte) break;
    index ^= base(*packed);
    if (has_leaf(*packed)) {
      longest = i + 1;
      const std::optional<uint32_t> leaf = node(index);
      if (!leaf) return outside(index);
      replacement_offset = value(*leaf);
    }
  }
  if (longest == 0) return Found();
  if (replacement_offset >= replacements_.size())
    return malformed("replacement offset " + std::to_string(replacement_offset) + " is outside its " +
                     std::to_string(replacements_.size()) + " bytes of replacements");
  const size_t end = replacements_.find('\0', replacement_offset);
  if (end == std::string::npos)
    return malformed("replacement at offset " + std::to_string(replacement_offset) + " has no NUL");
  return Found(Match{std::string_view(replacements_).substr(replacement_offset, end - replacement_offset), longest});
}

}  // namespace attendre::tokenizer
