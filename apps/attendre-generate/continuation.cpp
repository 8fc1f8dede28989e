#include "continuation.hpp"

namespace attendre::generate_tool {

Continuation::Continuation(const Tokenizer& tokenizer, std::vector<uint32_t> prompt)
    : tokenizer_(tokenizer), ids_(std::move(prompt)), prompt_ids_(ids_.size()), prompt_text_(tokenizer.decode(ids_).value_or_throw()) {}

std::string Continuation::text() const {
  const std::string whole = tokenizer_.decode(ids_).value_or_throw();
  if (whole.compare(0, prompt_text_.size(), prompt_text_) == 0) return whole.substr(prompt_text_.size());
  // The prompt reads differently once continued (a character split across
  // the boundary): the generated ids on their own.
  return tokenizer_.decode(std::span<const uint32_t>(ids_).subspan(prompt_ids_)).value_or_throw();
}

std::string Continuation::add(uint32_t token) {
  ids_.push_back(token);
  const std::string now = text();
  // Only text that extends what was streamed can be streamed; a rewrite
  // (rare: see text()) shows in the final text only.
  if (now.compare(0, streamed_.size(), streamed_) != 0) return {};
  std::string fresh = now.substr(streamed_.size());
  streamed_ = now;
  return fresh;
}

}  // namespace attendre::generate_tool
