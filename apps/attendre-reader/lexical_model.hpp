// The lexical model: a three-block transformer stack whose weights are
// written by hand, not learned, so that the reader shows the memory at work
// on any machine without a model file. It reads words, not meanings:
//
// Embedding (hidden 128). Every word gets a pseudo-random sign vector hashed
// from its lowercased text (48 dims of +-1; function words and punctuation
// 12 dims of +-2 instead, so they match nothing); every token also carries
// a sign vector hashed from its sentence's ordinal (32 dims), a flag for
// "in the question" or "elsewhere" (4), a constant (4) and padding (4). The
// squared norm is 128 for every token, so the first RMSNorm is an exact
// identity and block 0 computes in small integers on every backend.
//
// Each block has two heads of 64 (no position encoding, no FFN):
//   head 0 in every block, the "question glance": every query looks at the
//     question's tokens (logit 4 against 0), which is what lets an
//     attention-scored memory keep the question at all;
//   block 0 head 1, "match": a word attends to the other occurrences of
//     the same word (logit 12; +1 for those outside the question), and
//     writes into a relevance dimension how much of that lands on the
//     question: words the question shares get relevance ~1, others ~0;
//   block 1 head 1, "gather": a token attends to the tokens of its own
//     sentence and writes their mean relevance into a sentence-relevance
//     dimension, so the whole sentence of a matching fact is relevant,
//     its answer included;
//   block 2 head 1, "read": every query looks at relevant sentences
//     (logit 8 x sentence relevance; the question itself is held down).
//
// So a fact survives only if the memory kept the question long enough for
// block 0 to recognize it, and then kept the fact itself: what the paper's
// template ("question before the document") asks of a memory.
#pragma once

#include "backend.hpp"

#include <map>
#include <string>
#include <vector>

namespace reader {

class LexicalModel final : public Backend {
 public:
  static constexpr uint32_t kHidden = 128, kHeads = 2, kHeadDim = 64, kBlocks = 3;

  LexicalModel();

  std::string kind() const override { return "lexical"; }
  std::string description() const override;
  std::vector<std::string> block_roles() const override { return {"match", "gather", "read"}; }
  attendre::StackConfig stack_shape() const override;
  attendre::WeightSource& weights() override { return weights_; }
  std::unique_ptr<TokenStream> make_token_stream() const override;
  void append_input(const Token& token, int64_t position, StackInputs& inputs) const override;
  bool first_block_qkv(const Token& token, std::span<float> q, std::span<float> k, std::span<float> v) const override;
  std::optional<std::string> answer(attendre::TransformerStack&, std::span<const float>, int64_t) override {
    return std::nullopt;
  }

  // The embedding of `token` (kHidden values).
  void embed(const Token& token, std::span<float> row) const;

 private:
  // Fixed fp32 tensors by name, as a WeightSource hands them out.
  class Weights final : public attendre::WeightSource {
   public:
    attendre::Result<std::optional<attendre::ElementType>> type_of(const std::string& name,
                                                                   std::span<const uint64_t> shape) override;
    attendre::Result<std::optional<attendre::TensorView>> tensor(const std::string& name,
                                                                 std::span<const uint64_t> shape) override;
    void add(std::string name, std::vector<uint64_t> shape, std::vector<float> values);
    const std::vector<float>& values(const std::string& name) const { return tensors_.at(name).values; }

   private:
    struct Tensor {
      std::vector<uint64_t> shape;
      std::vector<float> values;
    };
    const Tensor* find(const std::string& name, std::span<const uint64_t> shape) const;
    std::map<std::string, Tensor> tensors_;
  };

  Weights weights_;
};

}  // namespace reader
