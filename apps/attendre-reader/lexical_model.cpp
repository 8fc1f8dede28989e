#include "lexical_model.hpp"

#include "core/fail.hpp"
#include "word_splitter.hpp"

#include <attendre/error.hpp>

#include <cmath>

namespace reader {
namespace {

using attendre::ElementType;

// The embedding's layout. Squared norms: a content word 48 x 1, a function
// word 12 x 4, the sentence 32 x 1, one flag, the constant and the padding
// 16 each: 128 for every token, so RMSNorm divides by exactly 1.
constexpr uint32_t kWord = 0, kWordDims = 48;
constexpr uint32_t kFunction = 48, kFunctionDims = 12;
constexpr uint32_t kSentence = 60, kSentenceDims = 32;
constexpr uint32_t kQuestionFlag = 92, kOtherFlag = 93, kConstant = 94, kPadding = 95;
constexpr uint32_t kRelevance = 96, kSentenceRelevance = 97;  // written by blocks 0 and 1
constexpr float kFlag = 4.0f;
static_assert(kSentenceRelevance < LexicalModel::kHidden);

constexpr uint32_t H = LexicalModel::kHidden, D = LexicalModel::kHeadDim;
constexpr uint32_t kGlanceHead = 0, kWorkHead = 1;

// splitmix64: well-mixed bits from any seed, the same on every machine.
uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

float sign(uint64_t bits, uint32_t i) { return (bits >> i) & 1 ? 1.0f : -1.0f; }

// A [rows][cols] row-major matrix being written entry by entry.
struct Matrix {
  uint32_t rows, cols;
  std::vector<float> values;
  Matrix(uint32_t r, uint32_t c) : rows(r), cols(c), values(uint64_t{r} * c, 0.0f) {}
  void set(uint32_t head, uint32_t dim, uint32_t column, float value) { values[uint64_t{head * D + dim} * cols + column] = value; }
};

// Logits are scale * q.k with the default scale 1/sqrt(64) = 1/8; every
// weight below is a small power of two, so block 0 stays exact in fp32 and fp16.
void glance(Matrix& wq, Matrix& wk) {
  wq.set(kGlanceHead, 0, kConstant, 1.0f);     // q = 4
  wk.set(kGlanceHead, 0, kQuestionFlag, 2.0f);  // k = 8 for question tokens: logit 4
}

void match_block(Matrix& wq, Matrix& wk, Matrix& wv, Matrix& wo) {
  for (uint32_t d = 0; d < kWordDims; ++d) {
    wq.set(kWorkHead, d, kWord + d, 1.0f);
    wk.set(kWorkHead, d, kWord + d, 2.0f);  // the same word: 48 * 2 / 8 = logit 12
  }
  // Occurrences outside the question weigh e^1 more: a word of the question
  // that also appears in the text keeps a share of its attention (~27%) on
  // the question, and function words (no word dims) look away from it.
  wq.set(kWorkHead, kWordDims, kPadding, 1.0f);
  wk.set(kWorkHead, kWordDims, kOtherFlag, 0.5f);
  wv.set(kWorkHead, 0, kQuestionFlag, 1.0f);  // value 4 on question tokens
  wo.values[uint64_t{kRelevance} * wo.cols + kWorkHead * D] = 1.0f;
}

void gather_block(Matrix& wq, Matrix& wk, Matrix& wv, Matrix& wo) {
  for (uint32_t d = 0; d < kSentenceDims; ++d) {
    wq.set(kWorkHead, d, kSentence + d, 1.0f);
    wk.set(kWorkHead, d, kSentence + d, 2.0f);  // the same sentence: 32 * 2 / 8 = logit 8
  }
  wv.set(kWorkHead, 0, kRelevance, 1.0f);
  wo.values[uint64_t{kSentenceRelevance} * wo.cols + kWorkHead * D] = 1.0f;
}

void read_block(Matrix& wq, Matrix& wk) {
  wq.set(kWorkHead, 0, kConstant, 1.0f);
  wk.set(kWorkHead, 0, kSentenceRelevance, 16.0f);  // logit 8 per unit of sentence relevance
  wq.set(kWorkHead, 1, kConstant, 1.0f);
  wk.set(kWorkHead, 1, kQuestionFlag, -8.0f);  // -16: the question has its own head
}

}  // namespace

LexicalModel::LexicalModel() {
  const std::vector<uint64_t> square = {H, H}, vector = {H};
  const std::vector<float> ones(H, 1.0f);
  for (uint32_t l = 0; l < kBlocks; ++l) {
    Matrix wq(H, H), wk(H, H), wv(H, H), wo(H, H);
    glance(wq, wk);
    if (l == 0) match_block(wq, wk, wv, wo);
    if (l == 1) gather_block(wq, wk, wv, wo);
    if (l == 2) read_block(wq, wk);
    const std::string p = "blk." + std::to_string(l) + ".";
    weights_.add(p + "attn_norm.weight", vector, ones);
    weights_.add(p + "attn_q.weight", square, std::move(wq.values));
    weights_.add(p + "attn_k.weight", square, std::move(wk.values));
    weights_.add(p + "attn_v.weight", square, std::move(wv.values));
    weights_.add(p + "attn_output.weight", square, std::move(wo.values));
  }
  weights_.add("output_norm.weight", vector, ones);
}

std::string LexicalModel::description() const {
  return "lexical model: hashed word embeddings, 3 hand-written blocks (match, gather, read), no learned weights";
}

attendre::StackConfig LexicalModel::stack_shape() const {
  attendre::StackConfig c;
  c.hidden = H;
  c.vocab = 0;
  for (uint32_t l = 0; l < kBlocks; ++l) {
    attendre::BlockConfig b;
    b.attention.shape = {kHeads, kHeads, kHeadDim};
    b.ffn = 0;
    b.rope = false;
    b.norm = attendre::NormKind::rms;
    // Smaller than half an fp32 ulp of 1: RMSNorm of a norm-128 embedding
    // then divides by exactly 1 on the device and in the reference alike.
    b.norm_eps = 1e-30f;
    c.blocks.push_back(b);
  }
  return c;
}

std::unique_ptr<TokenStream> LexicalModel::make_token_stream() const { return std::make_unique<WordSplitter>(); }

void LexicalModel::embed(const Token& token, std::span<float> row) const {
  std::fill(row.begin(), row.end(), 0.0f);
  const uint64_t word = mix(token.id);
  if (token.content) {
    for (uint32_t d = 0; d < kWordDims; ++d) row[kWord + d] = sign(word, d);
  } else {
    for (uint32_t d = 0; d < kFunctionDims; ++d) row[kFunction + d] = 2.0f * sign(word, d);
  }
  const uint64_t sentence = mix(0x5e47e9ce0000000ull ^ token.sentence);
  for (uint32_t d = 0; d < kSentenceDims; ++d) row[kSentence + d] = sign(sentence, d);
  row[token.part == Part::question ? kQuestionFlag : kOtherFlag] = kFlag;
  row[kConstant] = kFlag;
  row[kPadding] = kFlag;
}

void LexicalModel::append_input(const Token& token, int64_t position, StackInputs& inputs) const {
  const size_t at = inputs.embeddings.size();
  inputs.embeddings.resize(at + H);
  embed(token, std::span<float>(inputs.embeddings).subspan(at, H));
  inputs.positions.push_back(position);
}

bool LexicalModel::first_block_qkv(const Token& token, std::span<float> q, std::span<float> k,
                                   std::span<float> v) const {
  std::vector<float> x(H);
  embed(token, x);
  // RMSNorm as the stack computes it; with every embedding's mean square
  // exactly 1 it changes nothing, and every product below is exact.
  double squares = 0.0;
  for (float e : x) squares += double{e} * e;
  const std::vector<float>& gain = weights_.values("blk.0.attn_norm.weight");
  const double inv = 1.0 / std::sqrt(squares / H + double{stack_shape().blocks[0].norm_eps});
  std::vector<double> normed(H);
  for (uint32_t i = 0; i < H; ++i) normed[i] = x[i] * inv * gain[i];
  const auto project = [&](const char* name, std::span<float> out) {
    const std::vector<float>& w = weights_.values(std::string("blk.0.") + name + ".weight");
    for (size_t r = 0; r < out.size(); ++r) {
      double sum = 0.0;
      for (uint32_t c = 0; c < H; ++c) sum += w[r * H + c] * normed[c];
      out[r] = static_cast<float>(sum);
    }
  };
  project("attn_q", q);
  project("attn_k", k);
  project("attn_v", v);
  return true;
}

void LexicalModel::Weights::add(std::string name, std::vector<uint64_t> shape, std::vector<float> values) {
  tensors_[std::move(name)] = Tensor{std::move(shape), std::move(values)};
}

const LexicalModel::Weights::Tensor* LexicalModel::Weights::find(const std::string& name,
                                                                   std::span<const uint64_t> shape) const {
  const auto it = tensors_.find(name);
  if (it == tensors_.end()) return nullptr;
  if (!std::equal(shape.begin(), shape.end(), it->second.shape.begin(), it->second.shape.end()))
    attendre::fail(attendre::ErrorCode::invalid_argument, "the lexical model's tensor '" + name + "' has another shape");
  return &it->second;
}

attendre::Result<std::optional<ElementType>> LexicalModel::Weights::type_of(const std::string& name,
                                                                            std::span<const uint64_t> shape) {
  return find(name, shape) ? std::optional<ElementType>(ElementType::f32) : std::optional<ElementType>();
}

attendre::Result<std::optional<attendre::TensorView>> LexicalModel::Weights::tensor(const std::string& name,
                                                                                   std::span<const uint64_t> shape) {
  const Tensor* t = find(name, shape);
  if (!t) return std::optional<attendre::TensorView>();
  return std::optional<attendre::TensorView>(
      attendre::TensorView{ElementType::f32, std::as_bytes(std::span<const float>(t->values))});
}

}  // namespace reader
