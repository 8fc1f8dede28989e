// The seam between the reader and the model that reads: the lexical model
// (lexical_model.hpp) or a GGUF model (model_backend.hpp). A backend owns the stack's shape and weights,
// turns text into tokens and tokens into the first block's inputs, and
// answers once the document has been read and drained. The memory (N, M,
// K, policies) is the reader's: memory_settings.hpp applies it to the shape.
#pragma once

#include "token.hpp"

#include <attendre/stack.hpp>
#include <attendre/tensor.hpp>

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace reader {

// One chunk's inputs for the first block, owned: token ids (vocab > 0) or
// embeddings (vocab = 0), with their positions.
struct StackInputs {
  std::vector<uint32_t> tokens;
  std::vector<float> embeddings;
  std::vector<int64_t> positions;

  size_t rows() const { return positions.size(); }
  void clear() {
    tokens.clear();
    embeddings.clear();
    positions.clear();
  }
  attendre::StackChunk chunk() const {
    attendre::StackChunk c;
    c.rows = static_cast<uint32_t>(positions.size());
    c.tokens = tokens;
    c.embeddings = embeddings;
    c.positions = positions;
    return c;
  }
};

class Backend {
 public:
  virtual ~Backend() = default;

  // "lexical" or "model", for the JSON output.
  virtual std::string kind() const = 0;
  // One line naming the model, printed with the configuration.
  virtual std::string description() const = 0;
  // What each block does, for the printout ("match", "gather", "read");
  // empty where the blocks have no names of their own.
  virtual std::vector<std::string> block_roles() const { return {}; }

  // The stack's shape: hidden size, vocabulary, blocks with their heads,
  // norms and position encodings. Memory fields are left for the reader.
  virtual attendre::StackConfig stack_shape() const = 0;
  virtual attendre::WeightSource& weights() = 0;

  virtual std::unique_ptr<TokenStream> make_token_stream() const = 0;
  // Appends the first block's input for `token` at `position` to `inputs`.
  virtual void append_input(const Token& token, int64_t position, StackInputs& inputs) const = 0;

  // The first block's query, key and value of `token` exactly as the stack
  // computes them, for a backend whose first block sees nothing but the
  // token itself; false where only running the stack can tell (then the
  // reader reports no retained attention mass and exports no stream).
  virtual bool first_block_qkv(const Token& token, std::span<float> q, std::span<float> k, std::span<float> v) const = 0;

  // After the read and the drain: the generated answer, or nullopt for a
  // backend without a vocabulary to answer in (stack_shape().vocab == 0,
  // when the reader has no logits to give). `last_logits`: the document's
  // last position's; `next_position`: the document's length.
  virtual std::optional<std::string> answer(attendre::TransformerStack& stack, std::span<const float> last_logits,
                                            int64_t next_position) = 0;
};

}  // namespace reader
