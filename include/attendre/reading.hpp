// Reading a document with a model and answering a question about it, as the
// reader tool (apps/attendre-reader --model) and the C API do it: the
// prompt template's parts (literal text, the question, the context) are
// encoded part by part as one streamed document, stepped through a stack in
// chunks of S, finished, and answered greedily with the first line of what
// the model generates.
#pragma once

#include <attendre/stack.hpp>
#include <attendre/tokenizer.hpp>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace attendre {

// A model's tokenizer as a streamed document goes through it. Each part is
// encoded as a text of its own, a token never spanning two parts, except
// that the spaces that end a part start the next one (so " word" stays one
// token). The first piece starts with BOS where the vocabulary asks for it,
// the others continue the document, and none ends with EOS: an answer
// follows. A long part is buffered and encoded in pieces cut at the
// tokenizer's continuation points (every kPiece bytes), which gives the ids
// of the part encoded whole; text with no continuation point in kForcedCut
// bytes (no ASCII words: Chinese, say) is cut at a character boundary.
class DocumentEncoder {
 public:
  static constexpr size_t kPiece = 64 * 1024;        // encode once this much is buffered
  static constexpr size_t kForcedCut = 1024 * 1024;  // cut anyway past this

  // One encoded piece: `text` is what was encoded, whose first `carried`
  // bytes are spaces that ended an earlier part; `ids` its tokens. Both
  // views last until the sink returns.
  struct Piece {
    std::string_view text;
    size_t carried = 0;
    std::span<const uint32_t> ids;
  };
  using Sink = std::function<void(const Piece&)>;

  explicit DocumentEncoder(Tokenizer tokenizer) : tokenizer_(std::move(tokenizer)) {}
  void begin_part();
  // Buffers `text` and hands over the pieces it completes. Each of these
  // fails as Tokenizer::encode does (invalid UTF-8 in a piece).
  Status feed(std::string_view text, const Sink& sink);
  // The part's text up to its trailing spaces (which the next part carries).
  Status end_part(const Sink& sink);
  // Whatever is still buffered (the last part's trailing spaces).
  Status end_document(const Sink& sink);

  const Tokenizer& tokenizer() const { return tokenizer_; }

 private:
  Status encode(size_t end, const Sink& sink);

  Tokenizer tokenizer_;
  std::string pending_;   // not yet encoded: carried spaces, then the part's text
  size_t carried_ = 0;    // leading bytes of pending_ from the previous part
  bool started_ = false;  // the document has begun: pieces continue it
  std::vector<uint32_t> ids_;
};

// The reader's default prompt template; {question} and {context} are filled in.
inline constexpr std::string_view kReadTemplate = "Question: {question}\n\nContext: {context}\n\nAnswer:";

struct Answer {
  // The first line of the generated text, trimmed: a model that goes on
  // past it writes a new question, or more story. Valid UTF-8 only (a small
  // model may stop inside a character, or emit stray bytes).
  std::string text;
  std::vector<uint32_t> tokens;  // everything generated, the stop token excluded
  bool stopped = false;          // a stop token ended generation (else the budget)
};

// The answer text of generated `text`: its valid UTF-8 prefix, from the
// first character that is not a space, tab or newline to the end of that
// line, trailing spaces and carriage returns removed.
std::string answer_line(std::string_view text);

// Greedy generation of at most `max_tokens` after a finished read whose
// last position's logits are `last_logits`, stopping at the tokenizer's stop
// tokens, and its answer line.
Result<Answer> answer_after(TransformerStack& stack, const Tokenizer& tokenizer,
                            std::span<const float> last_logits, int64_t next_position, uint32_t max_tokens);

struct ReadOptions {
  uint32_t answer_tokens = 32;  // the answer's budget
  // Finish by flushing (needs StackConfig::flush_capable) instead of draining.
  bool flush = false;
};

struct ReadResult {
  Answer answer;
  uint64_t document_tokens = 0;  // positions the document took (0 .. document_tokens - 1)
};

// kReadTemplate with `question` and `context`, streamed through `stack` (a
// fresh stack with a vocabulary, `tokenizer`'s model's) in chunks of its S,
// finished and answered. Fails invalid_argument for invalid UTF-8 or a
// stack without a vocabulary, and as the stack's step or finish do.
Result<ReadResult> read_document(TransformerStack& stack, const Tokenizer& tokenizer, std::string_view question,
                                 std::string_view context, const ReadOptions& options = {});

}  // namespace attendre
