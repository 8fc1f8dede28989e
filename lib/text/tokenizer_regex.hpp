// A compiled PCRE2 pattern (8-bit, UTF, Unicode properties for \p{..}, \s,
// \d and \w; JIT-compiled where the platform supports it) and the splitting
// that pre-tokenizers do with it.
#pragma once

#include <attendre/status.hpp>

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace attendre::tokenizer {

// Where PCRE2 writes a match: one per thread of matching, reusable across
// patterns and subjects (only the whole-match offsets are read).
class MatchData {
 public:
  MatchData();  // get() is null when PCRE2 could not allocate it
  MatchData(const MatchData&) = delete;
  MatchData& operator=(const MatchData&) = delete;
  ~MatchData();
  void* get() const { return data_; }  // pcre2_match_data_8*

 private:
  void* data_ = nullptr;
};

class Regex {
 public:
  // Fails invalid_argument naming the pattern, the offset and PCRE2's reason.
  static Result<Regex> compile(std::string_view pattern);
  Regex(Regex&& other) noexcept;
  Regex& operator=(Regex&& other) noexcept;
  Regex(const Regex&) = delete;
  Regex& operator=(const Regex&) = delete;
  ~Regex();

  const std::string& pattern() const { return pattern_; }
  bool jit() const { return jit_; }

  // Cuts `subject` (valid UTF-8, not checked again) into the matches of the
  // pattern and the gaps between them, all kept in order (Hugging Face's
  // "isolated" split, llama.cpp's unicode_regex_split). The subject is all
  // the pattern sees: lookarounds stop at its ends. An empty match splits
  // there without making an empty piece. Fails invalid_argument when PCRE2
  // gives up on the subject (its match limits).
  Status split(std::string_view subject, std::vector<std::string_view>& pieces, MatchData& match) const;

 private:
  Regex() = default;
  std::string pattern_;
  void* code_ = nullptr;  // pcre2_code_8*, kept opaque so that pcre2.h stays out of this header
  bool jit_ = false;
};

// Applies `regexes` in sequence, each to every piece the previous ones left.
Result<std::vector<std::string_view>> split_in_sequence(std::string_view text, const std::vector<Regex>& regexes);

}  // namespace attendre::tokenizer
