// A streaming decoder stack (spec section 4, paper figure 2): L transformer
// blocks whose self-attention is an ATTENDRE layer. Block l consumes the
// positions block l-1 emitted, so the output trails the input by the sum of
// the blocks' N; finish() drains (or flushes) what is still waiting, and
// decode() then continues token by token in causal mode.
#pragma once

#include <attendre/config.hpp>
#include <attendre/layer.hpp>
#include <attendre/status.hpp>
#include <attendre/tensor.hpp>
#include <attendre/transformer.hpp>

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace attendre {

// LM-Infinite distances for RoPE blocks (paper section 4; docs/spec-notes.md,
// "LM-Infinite"): a query and a key whose positions differ by d are scored as
// if they were d_eff apart, d_eff = d while |d| <= n_local, else
// sign(d) * n_local, for future keys reached through the Q memory as for past
// ones. Sinks (pinned entries, positions < n_sink of the K/V memory) keep
// their original positions within n_local and sit at the cap in front of
// the query beyond it (d_eff = +n_local: position zero against the maximum).
struct LmInfinite {
  bool enabled = false;
  // The model's trained context length (GGUF <arch>.context_length) unless
  // overridden; at least 1.
  uint32_t n_local = 0;
};

// One pre-norm transformer block: x + Attn(norm(x)), then y + FFN(norm(y));
// with post_norms (Gemma 2 and 3) x + norm'(Attn(norm(x))), then
// y + norm'(FFN(norm(y))).
struct BlockConfig {
  // Heads, N, M, K, policy, masks. attention.chunk is set by the stack.
  LayerConfig attention;
  uint32_t ffn = 0;  // FFN inner width; 0: no FFN sublayer (the block ends after attention)
  // Cross-attention (spec 5): keys and values come from the encoder output
  // memory, loaded once before decoding, instead of the block's own rows.
  // Its queries do not wait (N = 0), it reads all of the memory (K >= M)
  // and inserts nothing while decoding; no RoPE.
  bool cross_attention = false;
  NormKind norm = NormKind::rms;
  float norm_eps = 1e-5f;
  ActivationKind activation = ActivationKind::silu;
  bool gated = true;  // act(x Wgate) * (x Wup), else act(x Wup)
  bool rope = true;
  RopeLayout rope_layout = RopeLayout::normal;
  uint32_t rope_dims = 0;  // 0: head_dim
  double rope_theta = 10000.0;
  RopeScaling rope_scaling;
  LmInfinite lm_infinite;  // RoPE blocks only
  // T5 bias (attention.retrieval.bias = t5): the block whose table
  // blk.<L>.attn_rel_b.weight [num_buckets][heads_q] this block reads (T5
  // keeps one, in block 0, for every block); none: its own.
  std::optional<uint32_t> t5_table_block;
  bool qkv_bias = false, output_bias = false, ffn_bias = false;
  // Norms of the attention output (blk.L.post_attention_norm.weight) and of
  // the FFN output (blk.L.post_ffw_norm.weight) before their residual adds,
  // RMSNorms with the block's eps (norm must be rms).
  bool post_norms = false;
  // The model's sliding window (Gemma's local blocks): the query and the
  // window - 1 positions before it; 0: a global block. Only a default:
  // MemoryPlan::model_windows turns it into the block's memory setting.
  uint32_t sliding_window = 0;
  // Per-head RMS norms of q and k after their projections and biases,
  // before RoPE (qwen3, gemma3): each head of head_dim values is normalized
  // with norm_eps and scaled by the block's attn_q_norm / attn_k_norm
  // weights [head_dim], which every head shares. Self-attention only.
  bool qk_norm = false;
};

struct StackConfig {
  uint32_t hidden = 0;
  uint32_t vocab = 0;  // 0: the caller feeds embeddings and no logits exist
  uint32_t chunk = 1;  // S: positions fed per step
  std::vector<BlockConfig> blocks;
  NormKind final_norm = NormKind::rms;
  float final_norm_eps = 1e-5f;
  bool tied_embeddings = false;  // the LM head reuses token_embd.weight
  // Token embeddings are multiplied by it (Gemma: sqrt(hidden)); rows fed as
  // embeddings are not.
  double embedding_scale = 1.0;
  // Final logit soft-capping (Gemma 2): logits become cap * tanh(logit / cap); 0: none.
  double logit_soft_cap = 0.0;
  // Storage of fp32 source matrices (and the embedding table): f16 rounds
  // them on upload. Tensors a source holds in another encoding keep it.
  WeightType weights = WeightType::f32;
  // Storage of the activations the matrix products read: the normed rows
  // (inputs of the q, k, v, gate and up projections), the attention rows
  // (input of Wo), the FFN's activated rows (input of the down projection)
  // and the final rows (input of the LM head). f16 halves their bytes
  // and the products' reads of them (rounded to nearest even, fp16
  // subnormals flushed to zero, as fp16 memories store) and takes GELU
  // from ggml's fp16 table, as llama.cpp's CPU backend computes F16 models;
  // math and accumulation stay fp32. The residual stream, the projections'
  // outputs and the hidden states handed out stay fp32. A value past
  // fp16's range becomes an infinity, which the finite checks report.
  MemoryStorage activations = MemoryStorage::f32;
  // Size insertions for flush: block l+1 then receives block l's N rows at
  // once, so it needs M >= N_l + n_sink under protect_new (a higher peak).
  bool flush_capable = false;

  // The first problem named (shapes, feasibility of every block), or ok.
  Status check() const;
  // The most rows block l receives in one step.
  uint32_t max_rows_in(size_t block) const;
  // The most rows one insertion into block l's K/V memory holds: its input
  // rows, or the whole encoder output memory for a cross-attention block.
  uint32_t max_insert(size_t block) const;
  // The block's attention config as the stack runs it (chunk = max_insert).
  LayerConfig attention(size_t block) const;
  // Positions of padding the drain needs: sum of the blocks' N.
  uint64_t drain_positions() const;
};

// One chunk of at most S positions for the first block: token ids (vocab >
// 0) or embeddings (rows * hidden). Empty `valid` means all valid.
struct StackChunk {
  uint32_t rows = 0;
  std::span<const uint32_t> tokens;
  std::span<const float> embeddings;
  std::span<const int64_t> positions;
  std::span<const uint8_t> valid;
};

struct StackRequest {
  bool hidden = true;   // final hidden states (after the final norm)
  bool logits = false;  // needs vocab > 0
};

// Valid positions that left the last block, in order, with their outputs.
struct StackOutput {
  std::vector<int64_t> positions;
  std::vector<float> hidden;  // positions.size() * hidden
  std::vector<float> logits;  // positions.size() * vocab
  void append(StackOutput&& more);
};

// Errors as values (attendre/status.hpp): every call that can fail returns
// a Result; Result::value_or_throw() throws it where wanted.
class TransformerStack {
 public:
  virtual ~TransformerStack() = default;
  virtual const StackConfig& config() const = 0;
  virtual Result<StackOutput> step(const StackChunk& chunk, const StackRequest& request = {}) = 0;
  // Drains with padding chunks (default) or flushes one block per step, until
  // no valid position waits in any block.
  Result<StackOutput> finish(const StackRequest& request = {}, bool flush = false);
  // After finish(): one position through every block, causal, without Q
  // memories; its key and value are inserted under each block's policy.
  virtual Result<StackOutput> decode(const StackChunk& one, const StackRequest& request = {}) = 0;
  virtual bool has_pending() const = 0;
  virtual Result<MemorySnapshot> snapshot(size_t block) = 0;

 protected:
  // finish()'s steps: a chunk of padding through every block; or block
  // `block`'s waiting rows retrieving at once and flowing on below it.
  virtual Result<StackOutput> drain_step(const StackRequest& request) = 0;
  virtual Result<StackOutput> flush_block(size_t block, const StackRequest& request) = 0;
  // After finish(): decode() may run, step() may not.
  virtual void mark_finished() = 0;
};

}  // namespace attendre
