#include "core/try.hpp"
#include "text/tokenizer_charsmap.hpp"

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

PrecompiledCharsmap::Walk PrecompiledCharsmap::walk(std::string_view text) const {
  Walk walk;
  if (nodes_.empty()) return walk;
  const auto outside = [&](size_t index) {
    walk.fault = Walk::Fault::index_outside;
    walk.index = index;
    return walk;
  };
  size_t longest = 0;
  uint32_t replacement_offset = 0;
  uint32_t index = base(nodes_[0]);
  for (size_t i = 0; i < text.size(); ++i) {
    const auto byte = static_cast<uint8_t>(text[i]);
    if (byte == 0) break;  // the keys are C strings
    index ^= byte;
    if (index >= nodes_.size()) return outside(index);
    const uint32_t packed = nodes_[index];
    if (label_check(packed) != byte) break;
    index ^= base(packed);
    if (has_leaf(packed)) {
      longest = i + 1;
      if (index >= nodes_.size()) return outside(index);
      replacement_offset = value(nodes_[index]);
    }
  }
  if (longest == 0) return walk;
  walk.offset = replacement_offset;
  if (replacement_offset >= replacements_.size()) {
    walk.fault = Walk::Fault::offset_outside;
    return walk;
  }
  const size_t end = replacements_.find('\0', replacement_offset);
  if (end == std::string::npos) {
    walk.fault = Walk::Fault::no_nul;
    return walk;
  }
  walk.match = Match{std::string_view(replacements_).substr(replacement_offset, end - replacement_offset), longest};
  return walk;
}

std::optional<PrecompiledCharsmap::Match> PrecompiledCharsmap::find(std::string_view text, bool& corrupt) const {
  Walk found = walk(text);
  corrupt = found.fault != Walk::Fault::none;
  return found.match;
}

Result<std::optional<PrecompiledCharsmap::Match>> PrecompiledCharsmap::longest_prefix(std::string_view text) const {
  const Walk found = walk(text);
  switch (found.fault) {
    case Walk::Fault::none: return found.match;
    case Walk::Fault::index_outside:
      return malformed("trie index " + std::to_string(found.index) + " is outside its " +
                       std::to_string(nodes_.size()) + " nodes");
    case Walk::Fault::offset_outside:
      return malformed("replacement offset " + std::to_string(found.offset) + " is outside its " +
                       std::to_string(replacements_.size()) + " bytes of replacements");
    case Walk::Fault::no_nul: break;
  }
  return malformed("replacement at offset " + std::to_string(found.offset) + " has no NUL");
}

}  // namespace attendre::tokenizer
