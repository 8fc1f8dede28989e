#include "document.hpp"

#include "core/fail.hpp"

namespace reader {
namespace {

// Hands each token of one part to `visit` with its gap and text: the part's
// text not yet consumed stays in `pending_`, from the end of the last token
// on, so a token cut across two pieces still arrives whole.
class PartWalker {
 public:
  // `carried`: what followed the previous part's last token, which comes
  // before this part's first token.
  PartWalker(TokenStream& tokenizer, Part part, const std::vector<NeedleBytes>& needles, int64_t& position,
             const std::function<void(const TokenView&)>& visit, std::string carried)
      : tokenizer_(tokenizer), part_(part), needles_(needles), position_(position), visit_(visit),
        carried_(std::move(carried)) {
    tokenizer_.begin_part(part);
  }

  void feed(std::string_view text) {
    pending_.append(text);
    tokenizer_.feed(text, tokens_);
    deliver();
  }

  // What follows the part's last token (with what was carried into the
  // part when it had no token at all). The document's last part also takes
  // what the tokenizer held back.
  std::string finish(bool last_part) {
    tokenizer_.end_part(tokens_);
    if (last_part) tokenizer_.end_document(tokens_);
    deliver();
    return carried_ + pending_;
  }

 private:
  void deliver() {
    size_t cursor = 0;  // into pending_, which starts at byte `consumed_` of the part
    for (const Token& token : tokens_) {
      const size_t at = static_cast<size_t>(token.offset - consumed_);
      std::string_view gap = std::string_view(pending_).substr(cursor, at - cursor);
      if (!carried_.empty()) {
        carried_.append(gap);
        gap = carried_;
      }
      TokenView view{position_++, token, gap, std::string_view(pending_).substr(at, token.length), needle_of(token)};
      visit_(view);
      carried_.clear();
      cursor = at + token.length;
    }
    tokens_.clear();
    pending_.erase(0, cursor);
    consumed_ += cursor;
  }

  int needle_of(const Token& token) const {
    if (part_ != Part::context) return -1;
    for (size_t i = 0; i < needles_.size(); ++i)
      if (token.offset < needles_[i].end && token.offset + token.length > needles_[i].begin) return static_cast<int>(i);
    return -1;
  }

  TokenStream& tokenizer_;
  Part part_;
  const std::vector<NeedleBytes>& needles_;
  int64_t& position_;
  const std::function<void(const TokenView&)>& visit_;
  std::vector<Token> tokens_;
  std::string carried_;
  std::string pending_;
  uint64_t consumed_ = 0;
};

}  // namespace

std::vector<TemplatePiece> parse_template(std::string_view text) {
  std::vector<TemplatePiece> pieces;
  std::string literal;
  int questions = 0, contexts = 0;
  auto flush = [&] {
    if (!literal.empty()) pieces.push_back({Part::template_text, std::move(literal)});
    literal.clear();
  };
  for (size_t i = 0; i < text.size();) {
    if (text.substr(i).starts_with("{question}")) {
      flush();
      pieces.push_back({Part::question, {}});
      ++questions;
      i += 10;
    } else if (text.substr(i).starts_with("{context}")) {
      flush();
      pieces.push_back({Part::context, {}});
      ++contexts;
      i += 9;
    } else if (text[i] == '\\' && i + 1 < text.size() && (text[i + 1] == 'n' || text[i + 1] == '\\')) {
      literal += text[i + 1] == 'n' ? '\n' : '\\';
      i += 2;
    } else {
      literal += text[i++];
    }
  }
  flush();
  attendre::require(questions == 1 && contexts == 1,
                    "the template needs {question} and {context} exactly once each, got " + std::to_string(questions) +
                        " and " + std::to_string(contexts));
  return pieces;
}

Document::Document(std::vector<TemplatePiece> pieces, std::string question, std::unique_ptr<TextSource> context,
                   std::vector<NeedleBytes> needles)
    : pieces_(std::move(pieces)), question_(std::move(question)), context_(std::move(context)),
      needles_(std::move(needles)) {}

void Document::walk(TokenStream& tokenizer, const std::function<void(const TokenView&)>& visit,
                    const std::function<void(std::string_view)>& trailing) {
  int64_t position = 0;
  std::string carried;
  for (const TemplatePiece& piece : pieces_) {
    const bool last_part = &piece == &pieces_.back();
    PartWalker part(tokenizer, piece.part, needles_, position, visit, std::move(carried));
    if (piece.part == Part::context) {
      context_->rewind();
      for (std::string_view text = context_->next(); !text.empty(); text = context_->next()) part.feed(text);
    } else {
      part.feed(piece.part == Part::question ? question_ : piece.text);
    }
    carried = part.finish(last_part);
  }
  if (trailing) trailing(carried);
}

}  // namespace reader
