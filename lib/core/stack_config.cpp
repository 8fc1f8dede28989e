#include "core/model_spec.hpp"
#include "core/try.hpp"
#include "core/numerics.hpp"
#include "core/positions.hpp"

#include <attendre/error.hpp>
#include <attendre/stack.hpp>

#include <algorithm>
#include <numeric>

namespace attendre {

uint32_t StackConfig::max_rows_in(size_t block) const {
  uint32_t rows = chunk;
  // A flush hands block l's N waiting rows to block l+1 in one step, and
  // every block below passes on at most what it received.
  if (flush_capable)
    for (size_t j = 0; j < block; ++j) rows = std::max(rows, blocks[j].attention.q_capacity);
  return rows;
}

uint32_t StackConfig::max_insert(size_t block) const {
  return blocks[block].cross_attention ? blocks[block].attention.kv.capacity : max_rows_in(block);
}

LayerConfig StackConfig::attention(size_t block) const {
  LayerConfig c = blocks[block].attention;
  c.chunk = max_insert(block);
  return c;
}

uint64_t StackConfig::drain_positions() const {
  return std::accumulate(blocks.begin(), blocks.end(), uint64_t{0},
                         [](uint64_t sum, const BlockConfig& b) { return sum + b.attention.q_capacity; });
}

Status StackConfig::check() const {
  ATTENDRE_REQUIRE(hidden >= 1, "stack hidden size must be at least 1");
  ATTENDRE_REQUIRE(chunk >= 1, "stack chunk size S must be at least 1");
  ATTENDRE_REQUIRE(!blocks.empty(), "a stack needs at least one block");
  ATTENDRE_REQUIRE(!tied_embeddings || vocab > 0, "tied embeddings need a vocabulary");
  // The device scales in fp32: a factor outside float32's normal range would
  // silently become infinite or zero.
  ATTENDRE_REQUIRE(embedding_scale > 0.0 && numerics::fits_float32(embedding_scale),
                   "embedding scale must be a positive float32, got " + std::to_string(embedding_scale));
  ATTENDRE_REQUIRE(logit_soft_cap == 0.0 || (logit_soft_cap > 0.0 && numerics::fits_float32(logit_soft_cap)),
                   "logit soft-cap must be 0 (none) or a positive float32, got " + std::to_string(logit_soft_cap));
  for (size_t l = 0; l < blocks.size(); ++l) {
    const BlockConfig& b = blocks[l];
    const std::string at = "block " + std::to_string(l) + ": ";
    ATTENDRE_REQUIRE(b.norm_eps > 0.0f && final_norm_eps > 0.0f, at + "norm eps must be positive");
    ATTENDRE_REQUIRE(!b.post_norms || b.norm == NormKind::rms, at + "post norms are RMSNorms: norm must be rms");
    ATTENDRE_REQUIRE(b.sliding_window <= 0x7FFFFFFFu, at + "sliding window must be below 2^31");
    if (b.cross_attention) {
      ATTENDRE_REQUIRE(b.sliding_window == 0, at + "cross-attention reads the whole encoder memory: no sliding window");
      ATTENDRE_REQUIRE(b.attention.q_capacity == 0, at + "cross-attention queries do not wait: N must be 0");
      ATTENDRE_REQUIRE(b.attention.full_attention(), at + "cross-attention reads all of the encoder memory: K must be >= M");
      ATTENDRE_REQUIRE(!b.rope, at + "cross-attention takes no RoPE");
      ATTENDRE_REQUIRE(!b.attention.retrieval.causal, at + "encoder and decoder positions differ: cross-attention is not causal");
      ATTENDRE_REQUIRE(!b.qk_norm, at + "q/k norms run on self-attention blocks only");
    }
    if (b.rope) {
      const uint32_t dims = b.rope_dims ? b.rope_dims : b.attention.shape.head_dim;
      ATTENDRE_REQUIRE(dims % 2 == 0 && dims <= b.attention.shape.head_dim,
              at + "rope_dims must be even and at most head_dim");
      ATTENDRE_REQUIRE(b.rope_theta > 0.0, at + "rope theta must be positive");
      ATTENDRE_TRY(positions::check(b.rope_scaling, at));
    }
    if (b.lm_infinite.enabled) {
      ATTENDRE_REQUIRE(b.rope, at + "LM-Infinite caps RoPE distances: it needs rope");
      ATTENDRE_REQUIRE(b.lm_infinite.n_local >= 1 && b.lm_infinite.n_local <= 0x7FFFFFFFu,
              at + "LM-Infinite n_local must be in [1, 2^31), got " + std::to_string(b.lm_infinite.n_local));
    }
    const RetrievalConfig& r = b.attention.retrieval;
    if (r.bias == BiasKind::t5) {
      ATTENDRE_REQUIRE(r.t5.table.empty(), at + "a stack reads t5 bias tables from its weights: leave retrieval.t5.table empty");
      if (b.t5_table_block) {
        const uint32_t owner = *b.t5_table_block;
        ATTENDRE_REQUIRE(owner < blocks.size() && blocks[owner].attention.retrieval.bias == BiasKind::t5 &&
                    !blocks[owner].t5_table_block,
                at + "t5_table_block must name a t5 block with a table of its own");
        const BlockConfig& o = blocks[owner];
        ATTENDRE_REQUIRE(o.attention.retrieval.t5.num_buckets == r.t5.num_buckets &&
                    o.attention.shape.heads_q == b.attention.shape.heads_q,
                at + "t5_table_block " + std::to_string(owner) + " has another table shape");
      }
    } else {
      ATTENDRE_REQUIRE(!b.t5_table_block, at + "t5_table_block is set but the bias is not t5");
    }
    ATTENDRE_TRY(attention(l).check().within("block " + std::to_string(l)));
  }
  // rope_freqs.weight (or LongRoPE's table) is one tensor for the whole model.
  std::optional<uint32_t> factor_pairs;
  std::optional<std::string> factor_tensor;
  for (const BlockConfig& b : blocks) {
    ATTENDRE_REQUIRE(!b.rope_scaling.long_rope || b.rope_scaling.freq_factors,
                     "LongRoPE's factor tables are per-pair divisors: long_rope needs freq_factors");
    if (!b.rope || !b.rope_scaling.freq_factors) continue;
    const uint32_t pairs = (b.rope_dims ? b.rope_dims : b.attention.shape.head_dim) / 2;
    ATTENDRE_REQUIRE(!factor_pairs || *factor_pairs == pairs, "blocks reading rope_freqs.weight rotate different rope_dims");
    factor_pairs = pairs;
    const std::string tensor = rope_factor_tensor(b.rope_scaling);
    ATTENDRE_REQUIRE(!factor_tensor || *factor_tensor == tensor,
                     "blocks read their RoPE factors from different tensors (" + *factor_tensor + ", " + tensor + ")");
    factor_tensor = tensor;
  }
  return {};
}

Result<StackOutput> TransformerStack::finish(const StackRequest& request, bool flush) {
  ATTENDRE_REQUIRE(!flush || config().flush_capable, "flush needs a stack built with flush_capable");
  StackOutput out;
  if (flush) {
    for (size_t l = 0; l < config().blocks.size(); ++l) {
      ATTENDRE_TRY_ASSIGN(StackOutput more, flush_block(l, request));
      out.append(std::move(more));
    }
  } else {
    while (has_pending()) {
      ATTENDRE_TRY_ASSIGN(StackOutput more, drain_step(request));
      out.append(std::move(more));
    }
  }
  mark_finished();
  return out;
}

void StackOutput::append(StackOutput&& more) {
  positions.insert(positions.end(), more.positions.begin(), more.positions.end());
  hidden.insert(hidden.end(), more.hidden.begin(), more.hidden.end());
  logits.insert(logits.end(), more.logits.begin(), more.logits.end());
}

}  // namespace attendre
