// Tokens as the reader streams them, whichever model reads: where each one
// sits in the templated document, and what the model needs of it.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

namespace reader {

// The pieces of the templated document (paper section 4):
// "Question: {question}\n\nContext: {context}\n\nAnswer:".
enum class Part : uint8_t { template_text, question, context };

struct Token {
  uint64_t id = 0;        // vocabulary id (model) or hash of the lowercased word (lexical model)
  uint64_t offset = 0;    // first byte, counted from the start of its piece of the document
  uint32_t length = 0;    // bytes
  // The lexical model's (a model's tokenizer leaves them): the ordinal of
  // the sentence it belongs to over the whole document, and whether it is
  // a content word (not punctuation nor a function word).
  uint32_t sentence = 0;
  Part part = Part::context;
  bool content = true;
};

// Text in, tokens out, piece by piece, so that a document of any length
// streams through. Each piece of the document is one part: begin_part(),
// feed() its text in as many pieces as it comes, end_part().
class TokenStream {
 public:
  virtual ~TokenStream() = default;
  // Offsets restart at 0; a new part also starts a new sentence.
  virtual void begin_part(Part part) = 0;
  // Appends the tokens that `text` completes; a token the piece cuts off
  // waits for the next piece or end_part().
  virtual void feed(std::string_view text, std::vector<Token>& out) = 0;
  virtual void end_part(std::vector<Token>& out) = 0;
  // After the last part's end_part(): what a tokenizer held back across
  // parts (a model's tokenizer: trailing spaces), as the last part's tokens.
  virtual void end_document(std::vector<Token>& /*out*/) {}
};

}  // namespace reader
