// The text a generation adds to its prompt, as it grows token by token.
// Decoding the generated ids alone would lose what a token means next to
// the prompt (SentencePiece drops the space a text starts with; a UTF-8
// character may start in the prompt), so the continuation is the decoded
// whole minus the decoded prompt.
#pragma once

#include <attendre/tokenizer.hpp>

#include <string>
#include <vector>

namespace attendre::generate_tool {

class Continuation {
 public:
  Continuation(const Tokenizer& tokenizer, std::vector<uint32_t> prompt);
  // Adds a token; returns the text that became final and was not returned before.
  std::string add(uint32_t token);
  // The whole continuation so far.
  std::string text() const;

 private:
  const Tokenizer& tokenizer_;
  std::vector<uint32_t> ids_;  // prompt, then the generated tokens
  size_t prompt_ids_;
  std::string prompt_text_;
  std::string streamed_;  // the text add() handed out
};

}  // namespace attendre::generate_tool
