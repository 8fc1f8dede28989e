#include "word_splitter.hpp"

#include <algorithm>
#include <array>

namespace reader {
namespace {

// English function words: frequent in any text, so that matching on them
// would say nothing about what a question asks. Sorted for binary search.
constexpr std::array<std::string_view, 120> kFunctionWords = {
    "a", "about", "after", "all", "also", "am", "an", "and", "any", "are", "as", "at", "be", "been", "before",
    "being", "but", "by", "can", "could", "d", "did", "do", "does", "doing", "down", "during", "each", "few", "for",
    "from", "had", "has", "have", "having", "he", "her", "here", "hers", "him", "his", "how", "i", "if", "in",
    "into", "is", "it", "its", "just", "ll", "m", "may", "me", "might", "more", "most", "must", "my", "no", "nor",
    "not", "now", "of", "off", "on", "once", "only", "or", "other", "our", "ours", "out", "over", "own", "re", "s",
    "same", "shall", "she", "should", "so", "some", "such", "t", "than", "that", "the", "their", "theirs", "them",
    "then", "there", "these", "they", "this", "those", "through", "to", "too", "under", "up", "ve", "very", "was",
    "we", "were", "what", "when", "where", "which", "while", "who", "whom", "why", "will", "with", "would"};

constexpr uint64_t kFnvOffset = 1469598103934665603ull, kFnvPrime = 1099511628211ull;

uint64_t fnv1a(std::string_view bytes) {
  uint64_t h = kFnvOffset;
  for (unsigned char c : bytes) h = (h ^ c) * kFnvPrime;
  return h;
}

// One decoded character: its code point and bytes. The text is valid UTF-8
// cut on character boundaries (TextSource checks it), so decoding needs no checks.
struct Char {
  uint32_t code = 0;
  uint32_t bytes = 1;
};

Char decode(std::string_view text, size_t i) {
  const auto b0 = static_cast<unsigned char>(text[i]);
  if (b0 < 0x80) return {b0, 1};
  const auto cont = [&](size_t k) { return static_cast<uint32_t>(static_cast<unsigned char>(text[i + k]) & 0x3F); };
  if (b0 < 0xE0) return {(uint32_t{b0} & 0x1F) << 6 | cont(1), 2};
  if (b0 < 0xF0) return {(uint32_t{b0} & 0x0F) << 12 | cont(1) << 6 | cont(2), 3};
  return {(uint32_t{b0} & 0x07) << 18 | cont(1) << 12 | cont(2) << 6 | cont(3), 4};
}

bool is_space(uint32_t c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f' || c == 0xA0 ||
         (c >= 0x2000 && c <= 0x200B) || c == 0x2028 || c == 0x2029 || c == 0x3000 || c == 0xFEFF;
}

// Letters, digits and '_'; past ASCII everything but Unicode's punctuation
// and symbol blocks (Latin-1 signs, general punctuation, CJK and fullwidth
// punctuation) counts as a letter: good enough to keep words of any script whole.
bool is_word(uint32_t c) {
  if (c < 0x80) return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
  if ((c >= 0xA0 && c <= 0xBF) || c == 0xD7 || c == 0xF7) return false;
  if ((c >= 0x2000 && c <= 0x206F) || (c >= 0x3000 && c <= 0x303F)) return false;
  if ((c >= 0xFE30 && c <= 0xFE4F) || (c >= 0xFF00 && c <= 0xFF0F) || (c >= 0xFF1A && c <= 0xFF20)) return false;
  return true;
}

bool ends_sentence(uint32_t c) { return c == '.' || c == '!' || c == '?' || c == 0x3002 || c == 0xFF01 || c == 0xFF1F; }

}  // namespace

bool is_function_word(std::string_view word) {
  return std::binary_search(kFunctionWords.begin(), kFunctionWords.end(), word);
}

void WordSplitter::begin_part(Part part) {
  part_ = part;
  offset_ = 0;
  word_.clear();
  word_bytes_ = 0;
  newlines_ = 0;
  break_sentence();
}

void WordSplitter::emit(Token token, std::vector<Token>& out) {
  if (started_ && (break_before_next_ || newlines_ >= 2 || sentence_tokens_ == kMaxSentenceTokens)) {
    ++sentence_;
    sentence_tokens_ = 0;
  }
  started_ = true;
  break_before_next_ = false;
  newlines_ = 0;
  ++sentence_tokens_;
  token.sentence = sentence_;
  token.part = part_;
  out.push_back(token);
}

void WordSplitter::end_word(std::vector<Token>& out) {
  if (word_bytes_ == 0) return;
  Token token;
  token.id = fnv1a(word_);
  token.offset = word_start_;
  token.length = word_bytes_;
  token.content = !is_function_word(word_);
  emit(token, out);
  word_.clear();
  word_bytes_ = 0;
}

void WordSplitter::feed(std::string_view text, std::vector<Token>& out) {
  for (size_t i = 0; i < text.size();) {
    const Char c = decode(text, i);
    const uint64_t at = offset_ + i;
    i += c.bytes;
    if (is_word(c.code)) {
      if (word_bytes_ == 0) word_start_ = at;
      // Lowercase ASCII only: enough for the function words and stable for every script.
      for (uint32_t k = 0; k < c.bytes; ++k) {
        const char b = text[i - c.bytes + k];
        word_.push_back(b >= 'A' && b <= 'Z' ? static_cast<char>(b - 'A' + 'a') : b);
      }
      word_bytes_ += c.bytes;
      continue;
    }
    end_word(out);
    if (is_space(c.code)) {
      if (c.code == '\n' || c.code == 0x2029) ++newlines_;
      continue;
    }
    Token mark;
    mark.id = fnv1a(text.substr(i - c.bytes, c.bytes));
    mark.offset = at;
    mark.length = c.bytes;
    mark.content = false;
    emit(mark, out);
    if (ends_sentence(c.code)) break_sentence();
  }
  offset_ += text.size();
}

void WordSplitter::end_part(std::vector<Token>& out) { end_word(out); }

}  // namespace reader
