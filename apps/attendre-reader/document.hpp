// The templated document the reader streams (paper section 4): the
// template's text with the question and the context put in, walked token by
// token with the text around each token, as many times as the reader needs
// (a survey, the yardstick, one read per policy, the rendering) without
// ever holding the context whole.
#pragma once

#include "text_source.hpp"
#include "token.hpp"

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace reader {

inline constexpr std::string_view kDefaultTemplate = "Question: {question}\n\nContext: {context}\n\nAnswer:";

// One piece of a template: literal text, or where the question or the context goes.
struct TemplatePiece {
  Part part = Part::template_text;
  std::string text;  // literal pieces only
};

// Splits `text` at "{question}" and "{context}", each of which must appear
// exactly once; "\n" and "\\" escapes become a newline and a backslash, so
// that a template fits on a command line. Throws invalid_argument naming
// what is missing or repeated.
std::vector<TemplatePiece> parse_template(std::string_view text);

// A planted fact, as bytes of the context.
struct NeedleBytes {
  uint64_t begin = 0, end = 0;
};

// A token as a walk hands it over: its position in the stream, the text
// between the previous token and it (spaces, newlines), its own text, and
// the needle it belongs to (-1 for none). Views last until the next token.
struct TokenView {
  int64_t position = 0;
  const Token& token;
  std::string_view gap;
  std::string_view text;
  int needle = -1;
};

class Document {
 public:
  Document(std::vector<TemplatePiece> pieces, std::string question, std::unique_ptr<TextSource> context,
           std::vector<NeedleBytes> needles);

  // Every token of the document in order, tokenized afresh by `tokenizer`;
  // a token's gap runs back to the previous token across parts, and
  // `trailing` receives what follows the document's last token. Throws
  // what the context's source throws (io_error, malformed_input with the
  // byte offset).
  void walk(TokenStream& tokenizer, const std::function<void(const TokenView&)>& visit,
            const std::function<void(std::string_view trailing)>& trailing = {});

  const std::string& question() const { return question_; }
  const TextSource& context() const { return *context_; }
  const std::vector<TemplatePiece>& pieces() const { return pieces_; }

 private:
  std::vector<TemplatePiece> pieces_;
  std::string question_;
  std::unique_ptr<TextSource> context_;
  std::vector<NeedleBytes> needles_;
};

}  // namespace reader
