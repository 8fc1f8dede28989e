// The reader's GGUF backend (--model): a llama-family model from a file
// (include/attendre/model.hpp) reads the document as token ids and, after
// the drain, answers greedily (attendre::generate_after). Its first block's
// queries and keys come only out of the stack, so the reader reports no
// retained attention mass for it.
#pragma once

#include "backend.hpp"
#include "common/lm_infinite_option.hpp"

#include <attendre/model.hpp>
#include <attendre/reading.hpp>
#include <attendre/tokenizer.hpp>

#include <filesystem>
#include <string>

namespace reader {

// A model's tokenizer as the reader streams text into it: the library's
// DocumentEncoder (include/attendre/reading.hpp: parts encoded on their own,
// trailing spaces carried to the next part, long parts cut at continuation
// points) with each token's part and byte span. A token's bytes are found in
// the text by its piece, so with a tokenizer that normalizes text (unigram's
// charsmap) a token's span may be approximate; the ids never are.
class ModelTokenStream final : public TokenStream {
 public:
  explicit ModelTokenStream(attendre::Tokenizer tokenizer) : encoder_(std::move(tokenizer)) {}
  void begin_part(Part part) override;
  void feed(std::string_view text, std::vector<Token>& out) override;
  void end_part(std::vector<Token>& out) override;
  void end_document(std::vector<Token>& out) override;

 private:
  // Emits the tokens of each piece the encoder completes into `out`.
  attendre::DocumentEncoder::Sink sink(std::vector<Token>& out);

  attendre::DocumentEncoder encoder_;
  Part part_ = Part::template_text;
  uint64_t pending_start_ = 0;  // the part's offset of the next piece's first byte past what it carries
};

struct ModelBackendOptions {
  attendre::ModelOptions model;
  uint32_t answer_tokens = 32;  // the answer's budget; it also ends at a newline after text, or a stop token
  attendre::cli::LmInfiniteRequest lm_infinite;  // on every RoPE block when enabled
};

class ModelBackend final : public Backend {
 public:
  ModelBackend(const std::filesystem::path& path, const ModelBackendOptions& options);

  std::string kind() const override { return "model"; }
  std::string description() const override;
  attendre::StackConfig stack_shape() const override;
  attendre::WeightSource& weights() override { return model_.weights(); }
  std::unique_ptr<TokenStream> make_token_stream() const override;
  void append_input(const Token& token, int64_t position, StackInputs& inputs) const override;
  bool first_block_qkv(const Token&, std::span<float>, std::span<float>, std::span<float>) const override { return false; }
  std::optional<std::string> answer(attendre::TransformerStack& stack, std::span<const float> last_logits,
                                    int64_t next_position) override;

 private:
  attendre::Model model_;
  ModelBackendOptions options_;
};

}  // namespace reader
