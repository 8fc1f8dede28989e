// The reader's GGUF backend (--model): a llama-family model from a file
// (include/attendre/model.hpp) reads the document as token ids and, after
// the drain, answers greedily (attendre::generate_after). Its first block's
// queries and keys come only out of the stack, so the reader reports no
// retained attention mass for it.
#pragma once

#include "backend.hpp"

#include <attendre/model.hpp>
#include <attendre/tokenizer.hpp>

#include <filesystem>
#include <string>

namespace reader {

// A model's tokenizer as the reader streams text into it. Each part of the
// template (its literal text, the question, the context) is encoded as a
// text of its own, a token never spanning two parts, except that the
// spaces that end a part start the next one (so " word" stays one token;
// they count in the earlier part's gap). The first part starts with BOS
// where the vocabulary asks for it, the others continue the document, and
// none ends with EOS: the answer follows. A long part is buffered and
// encoded in pieces cut at the tokenizer's continuation points (every
// 64 KiB), which gives the ids of the part encoded whole; text with no
// continuation point in 1 MiB (no ASCII words: Chinese, say) is cut at a
// character boundary instead. A token's bytes are found in the text by its
// piece, so with a tokenizer that normalizes text (unigram's charsmap) a
// token's span may be approximate; the ids never are.
class ModelTokenizer final : public Tokenizer {
 public:
  static constexpr size_t kPiece = 64 * 1024;        // encode once this much is buffered
  static constexpr size_t kForcedCut = 1024 * 1024;  // cut anyway past this

  explicit ModelTokenizer(attendre::Tokenizer tokenizer) : tokenizer_(std::move(tokenizer)) {}
  void begin_part(Part part) override;
  void feed(std::string_view text, std::vector<Token>& out) override;
  void end_part(std::vector<Token>& out) override;
  void end_document(std::vector<Token>& out) override;

 private:
  // Encodes pending_[0, end) and emits its tokens.
  void encode(size_t end, std::vector<Token>& out);

  attendre::Tokenizer tokenizer_;
  Part part_ = Part::template_text;
  std::string pending_;        // not yet encoded: carried spaces, then the part's text
  size_t carried_ = 0;         // leading bytes of pending_ from the previous part
  uint64_t pending_start_ = 0;  // the part's offset of pending_[carried_]
  bool started_ = false;       // the document has begun: pieces continue it
};

struct ModelBackendOptions {
  attendre::ModelOptions model;
  uint32_t answer_tokens = 32;  // the answer's budget; it also ends at a newline after text, or a stop token
};

class ModelBackend final : public Backend {
 public:
  ModelBackend(const std::filesystem::path& path, const ModelBackendOptions& options);

  std::string kind() const override { return "model"; }
  std::string description() const override;
  attendre::StackConfig stack_shape() const override;
  attendre::WeightSource& weights() override { return model_.weights(); }
  std::unique_ptr<Tokenizer> make_tokenizer() const override;
  void append_input(const Token& token, int64_t position, StackInputs& inputs) const override;
  bool first_block_qkv(const Token&, std::span<float>, std::span<float>, std::span<float>) const override { return false; }
  std::optional<std::string> answer(attendre::TransformerStack& stack, std::span<const float> last_logits,
                                    int64_t next_position) override;

 private:
  attendre::Model model_;
  ModelBackendOptions options_;
};

}  // namespace reader
