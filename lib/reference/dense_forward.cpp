// The full-sequence forward without memories: what the stack must equal when
// nothing is evicted and every query waits long enough (spec section 4).
#include "reference/model_tensors.hpp"
#include "core/stack_chunk.hpp"
#include "reference/block_math.hpp"
#include "reference/ops.hpp"
#include "core/positions.hpp"
#include "core/stream_validator.hpp"

#include <attendre/error.hpp>
#include <attendre/reference/stack.hpp>

#include <cmath>
#include <functional>
#include <limits>

namespace attendre::reference {
namespace {

// The logit of query row i, head h, against key row j, from their heads.
using PairLogit = std::function<double(size_t i, uint32_t h, size_t j, const double* q, const double* k)>;

// Softmax attention of every query row over every key row (causal: keys
// at or before the query's position).
std::vector<double> attend_all(const BlockMath::Projected& p, const AttentionShape& s, const PairLogit& logit,
                               std::span<const int64_t> positions, std::span<const int64_t> key_positions, bool causal) {
  const size_t rows = positions.size(), keys = key_positions.size();
  const uint32_t D = s.head_dim;
  std::vector<double> out(rows * s.q_row(), 0.0);
  std::vector<double> w(keys);
  for (size_t i = 0; i < rows; ++i)
    for (uint32_t h = 0; h < s.heads_q; ++h) {
      const uint32_t g = h / s.group();
      double top = -INFINITY;
      for (size_t j = 0; j < keys; ++j) {
        w[j] = -INFINITY;
        if (causal && key_positions[j] > positions[i]) continue;
        w[j] = logit(i, h, j, &p.q[(i * s.heads_q + h) * D], &p.k[(j * s.heads_kv + g) * D]);
        top = std::max(top, w[j]);
      }
      double total = 0.0;
      for (size_t j = 0; j < keys; ++j) total += (w[j] = std::isinf(w[j]) ? 0.0 : std::exp(w[j] - top));
      for (size_t j = 0; j < keys; ++j)
        for (uint32_t d = 0; d < D; ++d) out[(i * s.heads_q + h) * D + d] += w[j] / total * p.v[(j * s.heads_kv + g) * D + d];
    }
  return out;
}

}  // namespace

StackOutput dense_forward(const StackConfig& config, WeightSource& weights, const StackChunk& sequence, bool causal,
                          const StackRequest& request, std::span<const float> encoder_rows) {
  StackStreamValidator validator;
  validator.check(sequence, config, sequence.rows).or_throw();
  const ModelTensors tensors = load_model(config, weights);
  const HeadMath head(config, tensors);
  const uint32_t H = config.hidden;

  // Only valid rows take part: padding is not part of the sequence.
  StackOutput out;
  std::vector<uint32_t> tokens;
  std::vector<double> x;
  for (uint32_t r = 0; r < sequence.rows; ++r) {
    if (!sequence.valid.empty() && sequence.valid[r] == 0) continue;
    out.positions.push_back(sequence.positions[r]);
    if (config.vocab > 0) tokens.push_back(sequence.tokens[r]);
    else x.insert(x.end(), sequence.embeddings.begin() + uint64_t{r} * H, sequence.embeddings.begin() + uint64_t{r + 1} * H);
  }
  if (out.positions.empty()) return out;
  if (config.vocab > 0) x = head.embed(tokens);
  const std::vector<double> encoder(encoder_rows.begin(), encoder_rows.end());
  const std::vector<int64_t> encoder_positions(encoder.size() / H, 0);
  for (size_t l = 0; l < config.blocks.size(); ++l) {
    const BlockConfig& b = config.blocks[l];
    const BlockMath math(H, b, tensors.blocks[l], config.activations);
    BlockMath::Projected p = math.project(x, out.positions);
    std::span<const int64_t> keys = out.positions;
    if (b.cross_attention) {
      const BlockMath::Projected memory = math.project_memory(encoder);
      p.k = memory.k;
      p.v = memory.v;
      keys = encoder_positions;
    }
    // The memory's logits (spec 2.2), with every key held: LM-Infinite's
    // capped rotation (sinks as the memory would pin them) and the bias.
    RetrievalConfig retrieval = b.attention.retrieval;
    if (const std::optional<Tensor>& t5 = tensors.blocks[l].t5_table)
      retrieval.t5.table.assign(t5->data.begin(), t5->data.end());
    const uint32_t D = b.attention.shape.head_dim, n_sink = b.attention.kv.n_sink;
    const PairLogit logit = [&](size_t i, uint32_t h, size_t j, const double* q, const double* k) {
      const int64_t p_q = out.positions[i], p_k = keys[j];
      // A sliding window hides what it would have evicted (-inf: weight 0).
      if (retrieval.window > 0 && p_q - p_k >= int64_t{retrieval.window}) return -std::numeric_limits<double>::infinity();
      double dot = 0.0;
      if (b.lm_infinite.enabled) {
        const bool sink = n_sink > 0 && p_k < static_cast<int64_t>(n_sink);
        dot = math.rotated_dot(q, p_q, k, p_k, positions::lm_infinite_distance(p_q - p_k, b.lm_infinite.n_local, sink));
      } else {
        for (uint32_t d = 0; d < D; ++d) dot += q[d] * k[d];
      }
      return ops::soft_cap(b.attention.scale() * dot, retrieval.soft_cap) + positions::logit_bias(retrieval, h, b.attention.shape.heads_q, p_q, p_k);
    };
    x = math.finish(attend_all(p, b.attention.shape, logit, out.positions, keys, causal && !b.cross_attention), x);
  }
  const std::vector<double> normed = head.norm(x);
  if (request.hidden) out.hidden.assign(normed.begin(), normed.end());
  if (request.logits) {
    const std::vector<double> logits = head.logits(normed);
    out.logits.assign(logits.begin(), logits.end());
  }
  return out;
}

}  // namespace attendre::reference
