// Configuration of one ATTENDRE layer: the Q memory, the K/V memory with its
// eviction policy, and retrieval. Names follow ../shared/spec/memory-semantics.md.
#pragma once

#include <attendre/status.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace attendre {

// Eviction policies (spec 2.4). Every policy evicts the lowest score first.
enum class PolicyKind { fifo, lru, lfu, lra_last, lra_max, lra_sum, lfa };

std::string_view to_string(PolicyKind kind);
std::optional<PolicyKind> parse_policy(std::string_view name);

// The score given to a newly inserted entry by the attention-based policies
// (lra_*, lfa). fifo and lru start at the entry's position, lfu at 0.
struct InitialScore {
  enum class Kind { mean_minus_k_sigma, constant };
  Kind kind = Kind::mean_minus_k_sigma;
  double k = 1.0;      // for mean_minus_k_sigma: mu - k * sigma over held, unpinned entries
  double value = 0.0;  // for constant

  static InitialScore mean_minus_sigma(double k) { return {Kind::mean_minus_k_sigma, k, 0.0}; }
  static InitialScore constant(double v) { return {Kind::constant, 1.0, v}; }
};

struct Policy {
  PolicyKind kind = PolicyKind::fifo;
  double lambda = 0.0;  // lfa only: exponential decay per position (0 = LFA-0)
  InitialScore initial;

  static Policy fifo() { return {PolicyKind::fifo, 0.0, {}}; }
  static Policy lru() { return {PolicyKind::lru, 0.0, {}}; }
  static Policy lfu() { return {PolicyKind::lfu, 0.0, {}}; }
  static Policy lra_last(InitialScore init = {}) { return {PolicyKind::lra_last, 0.0, init}; }
  static Policy lra_max(InitialScore init = {}) { return {PolicyKind::lra_max, 0.0, init}; }
  static Policy lra_sum(InitialScore init = {}) { return {PolicyKind::lra_sum, 0.0, init}; }
  static Policy lfa(double lambda, InitialScore init = {}) { return {PolicyKind::lfa, lambda, init}; }

  // Known equivalences (spec 2.4). StreamingLLM is fifo with n_sink = 4 on
  // the memory; H2O is lfa(0) with a recent window (KvMemoryConfig::n_recent).
  static Policy sliding_window() { return fifo(); }
  static Policy tova() { return lra_last(); }
  static Policy h2o() { return lfa(0.0); }

  // lra_* and lfa score entries by attention weights and start at mu - k*sigma.
  bool attention_scored() const { return kind >= PolicyKind::lra_last; }
};

enum class RetrievalMode { per_head, shared };
// Position bias added to every logit (spec 2.2): none, ALiBi, or T5's
// relative position buckets.
enum class BiasKind { none, alibi, t5 };

std::string_view to_string(RetrievalMode mode);

// Head layout shared by queries, keys and values: query head h reads
// key/value head h / (heads_q / heads_kv), which covers MHA, GQA and MQA.
struct AttentionShape {
  uint32_t heads_q = 1;
  uint32_t heads_kv = 1;
  uint32_t head_dim = 1;

  uint32_t group() const { return heads_q / heads_kv; }
  uint32_t q_row() const { return heads_q * head_dim; }    // floats per query
  uint32_t kv_row() const { return heads_kv * head_dim; }  // floats per key or value
};

// How a memory stores its keys, values and (in a layer or stack block) its
// delayed queries. fp16 halves their bytes; scoring, softmax and
// accumulation stay fp32 (float64 in the reference, which rounds what it
// stores the same way: round to nearest even, fp16 subnormals flushed to
// zero). Inputs beyond fp16's range (|x| > 65504) are refused.
enum class MemoryStorage { f32, f16 };

std::string_view to_string(MemoryStorage storage);
std::optional<MemoryStorage> parse_memory_storage(std::string_view name);

struct KvMemoryConfig {
  uint32_t capacity = 0;  // M
  Policy policy;
  uint32_t n_sink = 0;    // positions < n_sink are pinned: never evicted
  // W: the recent window. An entry whose position is among the W most recent
  // (p > p_newest - W, p_newest the newest position held after the step's
  // insertion) is not eligible for eviction; 0: none (docs/spec-notes.md,
  // "Recent window"). H2O's recent tokens, kvpress's and OpenVINO's window.
  uint32_t n_recent = 0;
  bool protect_new = true;
  bool copy_out_evicted = false;
  // Keys and values, and the layer's Q memory with them (evicted entries
  // come back as stored, widened to fp32).
  MemoryStorage storage = MemoryStorage::f32;
};

// T5 relative position buckets (BiasKind::t5): bias(h, p_q, p_j) =
// table[bucket(p_j - p_q)][h], with the bucketing of T5's reference
// implementation (mesh_tensorflow's _relative_position_bucket, in float32 as
// it computes; docs/spec-notes.md, "T5 buckets"). T5 itself scales logits by
// 1 (RetrievalConfig::scale = 1).
struct T5Buckets {
  uint32_t num_buckets = 32;    // GGUF t5.attention.relative_buckets_count
  uint32_t max_distance = 128;  // distances from here on share the last bucket
  bool bidirectional = true;    // encoder self-attention; false: causal bucketing (decoder)
  // [num_buckets][heads_q] biases (GGUF attn_rel_b.weight). A stack fills it
  // from its weights and wants it empty here; a single layer needs it.
  std::vector<float> table;
};

struct RetrievalConfig {
  uint32_t top_k = 0;  // K; K >= capacity means full attention over the memory
  RetrievalMode mode = RetrievalMode::per_head;
  bool causal = false;
  bool tag_mask = false;
  std::optional<double> scale;  // default 1/sqrt(head_dim)
  BiasKind bias = BiasKind::none;
  T5Buckets t5;  // BiasKind::t5 only
  // Sliding window (llama.cpp's standard SWA): a key at p_k is hidden from a
  // query at p_q when p_q - p_k >= window, a distance mask beside the causal
  // one; 0: none. The caller's (MemorySetting::window).
  uint32_t window = 0;
  // Attention logit soft-capping (Gemma 2): every unmasked logit becomes
  // soft_cap * tanh(logit / soft_cap), after the scaled dot product and
  // before the position bias, top-K selection and softmax; 0: none. The
  // model's, like scale.
  double soft_cap = 0.0;
};

struct LayerConfig {
  AttentionShape shape;
  uint32_t chunk = 1;       // S: positions fed per step
  uint32_t q_capacity = 0;  // N: how many positions each query waits
  KvMemoryConfig kv;
  RetrievalConfig retrieval;

  // The first problem (invalid_argument or infeasible_config) named, or ok:
  // shapes, K, lambda and the eviction feasibility of spec 2.1.
  Status check() const;

  double scale() const;
  // Whether retrieval reads every held entry (no top-K selection needed).
  bool full_attention() const { return retrieval.top_k >= kv.capacity; }
  // The most queries one step can evict: S, or N for a flush step.
  uint32_t max_queries_per_step(bool with_flush) const;
};

// The infeasible_config failure of an insertion that must evict `needed`
// entries when only `eligible` may go (pinned entries, the recent window,
// protect_new).
Status infeasible_insertion(uint64_t needed, uint64_t eligible);

// Whether `position` lies in the recent window of W = `n_recent` positions
// ending at `newest` (the newest position held): p > newest - W. Exact for
// any int64 pair with position <= newest; n_recent = 0 protects nothing.
inline bool in_recent_window(int64_t position, int64_t newest, uint32_t n_recent) {
  return n_recent > 0 && position <= newest &&
         static_cast<uint64_t>(newest) - static_cast<uint64_t>(position) < n_recent;
}

// The input magnitudes every backend accepts, so that fp32 logits and
// attention outputs stay finite (docs/spec-notes.md, "Numerics"): for every
// query and key of a stream, |scale| * |q_h| * |k_g| (head norms) and every
// |v| at most 2^126. Chunks beyond them are refused with the row named.
inline constexpr double kMaxLogitMagnitude = 8.507059173023462e37;  // 2^126
inline constexpr double kMaxValueMagnitude = 8.507059173023462e37;  // 2^126
// With MemoryStorage::f16, every stored q, k and v element: fp16's largest finite value.
inline constexpr double kMaxHalfMagnitude = 65504.0;

// ALiBi slope of query head h among `heads` (geometric 2^(-8(h+1)/heads)).
double alibi_slope(uint32_t head, uint32_t heads);

}  // namespace attendre
