#include "core/try.hpp"
#include "text/tokenizer_regex.hpp"

#include "text/tokenizer_unicode.hpp"

#include <attendre/error.hpp>

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <algorithm>
#include <utility>

namespace attendre::tokenizer {
namespace {

pcre2_code* as_code(void* code) { return static_cast<pcre2_code*>(code); }

std::string pcre2_message(int error_code) {
  PCRE2_UCHAR buffer[256];
  if (pcre2_get_error_message(error_code, buffer, sizeof buffer) < 0) return "PCRE2 error " + std::to_string(error_code);
  return reinterpret_cast<const char*>(buffer);
}

}  // namespace

MatchData::MatchData() : data_(pcre2_match_data_create(1, nullptr)) {}

MatchData::~MatchData() { pcre2_match_data_free(static_cast<pcre2_match_data*>(data_)); }

Result<Regex> Regex::compile(std::string_view pattern) {
  Regex regex;
  regex.pattern_ = std::string(pattern);
  const std::string& pattern_ = regex.pattern_;
  void*& code_ = regex.code_;
  int error_code = 0;
  PCRE2_SIZE error_offset = 0;
  // UCP gives \s, \d, \w and the POSIX classes their Unicode meaning, as the
  // Oniguruma engine of the reference (Hugging Face) tokenizers does.
  code_ = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern_.data()), pattern_.size(), PCRE2_UTF | PCRE2_UCP,
                        &error_code, &error_offset, nullptr);
  if (code_ == nullptr)
    return invalid_argument("tokenizer: regex '" + unicode::printable(pattern_, 60) + "' does not compile at offset " +
                            std::to_string(error_offset) + ": " + pcre2_message(error_code));
  // JIT is an optimisation: where it is missing (a platform without it, a
  // build with it off), the interpreter gives the same matches.
  regex.jit_ = pcre2_jit_compile(as_code(code_), PCRE2_JIT_COMPLETE) == 0;
  return regex;
}

Regex::Regex(Regex&& other) noexcept
    : pattern_(std::move(other.pattern_)), code_(std::exchange(other.code_, nullptr)), jit_(other.jit_) {}

Regex& Regex::operator=(Regex&& other) noexcept {
  if (this != &other) {
    pcre2_code_free(as_code(code_));
    pattern_ = std::move(other.pattern_);
    code_ = std::exchange(other.code_, nullptr);
    jit_ = other.jit_;
  }
  return *this;
}

Regex::~Regex() { pcre2_code_free(as_code(code_)); }

Status Regex::split(std::string_view subject, std::vector<std::string_view>& pieces, MatchData& match) const {
  auto* match_data = static_cast<pcre2_match_data*>(match.get());
  const auto* bytes = reinterpret_cast<PCRE2_SPTR>(subject.data());
  size_t piece_start = 0;  // end of the last piece cut
  size_t search = 0;
  while (search < subject.size()) {
    // The text was validated once as a whole; checking it again on every
    // call would make splitting quadratic.
    int rc = pcre2_match(as_code(code_), bytes, subject.size(), search, PCRE2_NO_UTF_CHECK, match_data, nullptr);
    if (rc == PCRE2_ERROR_JIT_STACKLIMIT)  // the interpreter keeps its backtracking frames on the heap
      rc = pcre2_match(as_code(code_), bytes, subject.size(), search, PCRE2_NO_UTF_CHECK | PCRE2_NO_JIT, match_data,
                       nullptr);
    if (rc == PCRE2_ERROR_NOMATCH) break;
    if (rc < 0)
      return invalid_argument("tokenizer: regex '" + unicode::printable(pattern_, 60) + "' failed on a " +
                              std::to_string(subject.size()) + "-byte piece: " + pcre2_message(rc));
    const PCRE2_SIZE* offsets = pcre2_get_ovector_pointer(match_data);
    const size_t begin = offsets[0], end = offsets[1];
    if (begin > piece_start) pieces.push_back(subject.substr(piece_start, begin - piece_start));
    if (end > begin) {
      pieces.push_back(subject.substr(begin, end - begin));
      search = end;
    } else {
      // An empty match only marks a boundary; step over one character so
      // the same empty match is not found again.
      search = begin + std::min(unicode::sequence_length(subject[begin]), subject.size() - begin);
    }
    piece_start = begin == end ? begin : end;
  }
  if (piece_start < subject.size()) pieces.push_back(subject.substr(piece_start));
  return {};
}

Result<std::vector<std::string_view>> split_in_sequence(std::string_view text, const std::vector<Regex>& regexes) {
  if (text.empty()) return std::vector<std::string_view>();
  std::vector<std::string_view> pieces{text};
  MatchData match;
  if (match.get() == nullptr)
    return Status(ErrorCode::out_of_host_memory, "tokenizer: PCRE2 could not allocate match data");
  std::vector<std::string_view> next;
  for (const Regex& regex : regexes) {
    next.clear();
    for (const std::string_view piece : pieces) ATTENDRE_TRY(regex.split(piece, next, match));
    pieces.swap(next);
  }
  return pieces;
}

}  // namespace attendre::tokenizer
