#include <attendre/generate.hpp>
#include <attendre/reading.hpp>

#include "core/try.hpp"
#include "text/tokenizer_unicode.hpp"

namespace attendre {

void DocumentEncoder::begin_part() {
  carried_ = pending_.size();  // the previous part's trailing spaces start this one's text
}

Status DocumentEncoder::feed(std::string_view text, const Sink& sink) {
  pending_.append(text);
  if (pending_.size() < kPiece + carried_) return {};
  size_t cut = Tokenizer::continuation_point(pending_, pending_.size());
  if (cut <= carried_) {
    if (pending_.size() < kForcedCut + carried_) return {};
    cut = pending_.size();
    while (cut > carried_ && (static_cast<unsigned char>(pending_[cut - 1]) & 0xC0) == 0x80) --cut;  // inside a character
    if (cut > carried_) --cut;  // before the character's first byte
  }
  return encode(cut, sink);
}

Status DocumentEncoder::end_part(const Sink& sink) {
  size_t end = pending_.size();
  while (end > 0 && pending_[end - 1] == ' ') --end;
  if (end > carried_) return encode(end, sink);
  return {};
}

Status DocumentEncoder::end_document(const Sink& sink) {
  if (!pending_.empty()) return encode(pending_.size(), sink);
  return {};
}

Status DocumentEncoder::encode(size_t end, const Sink& sink) {
  Tokenizer::EncodeOptions options;
  options.continuation = started_;
  options.more_follows = true;  // the answer follows the document: never an EOS before it
  started_ = true;
  const std::string_view text = std::string_view(pending_).substr(0, end);
  ATTENDRE_TRY_ASSIGN(ids_, tokenizer_.encode(text, options));
  sink(Piece{text, std::min(carried_, end), ids_});
  pending_.erase(0, end);
  carried_ = 0;
  return {};
}

std::string answer_line(std::string_view text) {
  text = text.substr(0, tokenizer::unicode::first_invalid_utf8(text).value_or(text.size()));
  const size_t first = text.find_first_not_of(" \t\n");
  if (first == std::string_view::npos) return {};
  const size_t newline = text.find('\n', first);
  std::string line(text.substr(first, newline == std::string_view::npos ? std::string_view::npos : newline - first));
  while (!line.empty() && (line.back() == ' ' || line.back() == '\r')) line.pop_back();
  return line;
}

Result<Answer> answer_after(TransformerStack& stack, const Tokenizer& tokenizer,
                            std::span<const float> last_logits, int64_t next_position, uint32_t max_tokens) {
  GenerateOptions options;
  options.max_tokens = max_tokens;
  options.stop_tokens = tokenizer.stop_tokens();
  ATTENDRE_TRY_ASSIGN(GenerateResult result, generate_after(stack, last_logits, next_position, options));
  Answer answer;
  ATTENDRE_TRY_ASSIGN(const std::string text, tokenizer.decode(result.tokens));
  answer.text = answer_line(text);
  answer.tokens = std::move(result.tokens);
  answer.stopped = result.stopped;
  return answer;
}

namespace {

// Steps the document's ids through the stack in chunks of S. A full chunk
// steps only when the next id comes, so that the last step is known as such:
// it (and finish) ask for the logits the answer starts from, every other
// step reads nothing back.
class ChunkFeeder {
 public:
  explicit ChunkFeeder(TransformerStack& stack) : stack_(stack), chunk_(stack.config().chunk) {}

  Status add(uint32_t id) {
    if (ids_.size() == chunk_) ATTENDRE_TRY(step(false));
    ids_.push_back(id);
    positions_.push_back(next_++);
    return {};
  }

  // The last step, then finish(); the last position's logits.
  Result<std::vector<float>> finish(bool flush) {
    ATTENDRE_REQUIRE(next_ > 0, "read_document: the document has no tokens");
    ATTENDRE_TRY(step(true));
    ATTENDRE_TRY_ASSIGN(const StackOutput out, stack_.finish(final_request(), flush));
    keep_last_logits(out);
    ATTENDRE_REQUIRE(last_logits_.size() == stack_.config().vocab,
                     "read_document: the stack gave no logits for the last position");
    return std::move(last_logits_);
  }

  int64_t positions() const { return next_; }

 private:
  StackRequest final_request() const { return {false, true}; }

  Status step(bool last) {
    StackChunk chunk;
    chunk.rows = static_cast<uint32_t>(ids_.size());
    chunk.tokens = ids_;
    chunk.positions = positions_;
    const StackRequest request = last ? final_request() : StackRequest{false, false};
    ATTENDRE_TRY_ASSIGN(const StackOutput out, stack_.step(chunk, request));
    keep_last_logits(out);
    ids_.clear();
    positions_.clear();
    return {};
  }

  void keep_last_logits(const StackOutput& out) {
    const size_t vocab = stack_.config().vocab;
    if (out.logits.empty() || out.positions.back() != next_ - 1) return;
    last_logits_.assign(out.logits.end() - static_cast<std::ptrdiff_t>(vocab), out.logits.end());
  }

  TransformerStack& stack_;
  size_t chunk_;
  std::vector<uint32_t> ids_;
  std::vector<int64_t> positions_;
  int64_t next_ = 0;
  std::vector<float> last_logits_;
};

}  // namespace

Result<ReadResult> read_document(TransformerStack& stack, const Tokenizer& tokenizer, std::string_view question,
                                 std::string_view context, const ReadOptions& options) {
  ATTENDRE_REQUIRE(stack.config().vocab > 0, "read_document: the stack has no vocabulary (it reads embeddings)");
  ATTENDRE_REQUIRE(stack.config().vocab == tokenizer.size(),
                   "read_document: the stack's vocabulary has " + std::to_string(stack.config().vocab) +
                       " tokens, the tokenizer's " + std::to_string(tokenizer.size()));
  ATTENDRE_TRY(tokenizer::unicode::check_utf8(question, "read_document: the question"));
  ATTENDRE_TRY(tokenizer::unicode::check_utf8(context, "read_document: the context"));
  ChunkFeeder feeder(stack);
  DocumentEncoder encoder(tokenizer);
  // The sink cannot return a failure: it keeps the stack's first one, and
  // the stream stops at it.
  Status fed;
  const DocumentEncoder::Sink sink = [&](const DocumentEncoder::Piece& piece) {
    for (const uint32_t id : piece.ids) {
      if (!fed.ok()) return;
      fed = feeder.add(id);
    }
  };
  // The template's literal parts around the question and the context.
  const std::string_view t = kReadTemplate;
  const size_t q = t.find("{question}"), c = t.find("{context}");
  const std::string_view parts[] = {t.substr(0, q), question, t.substr(q + 10, c - q - 10), context, t.substr(c + 9)};
  for (const std::string_view part : parts) {
    encoder.begin_part();
    ATTENDRE_TRY(encoder.feed(part, sink));
    ATTENDRE_TRY(fed);
    ATTENDRE_TRY(encoder.end_part(sink));
    ATTENDRE_TRY(fed);
  }
  ATTENDRE_TRY(encoder.end_document(sink));
  ATTENDRE_TRY(fed);
  ATTENDRE_TRY_ASSIGN(const std::vector<float> last_logits, feeder.finish(options.flush));
  ReadResult result;
  result.document_tokens = static_cast<uint64_t>(feeder.positions());
  ATTENDRE_TRY_ASSIGN(result.answer,
                      answer_after(stack, tokenizer, last_logits, feeder.positions(), options.answer_tokens));
  return result;
}

}  // namespace attendre
