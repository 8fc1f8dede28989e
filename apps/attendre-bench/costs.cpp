#include "costs.hpp"

#include <algorithm>

namespace bench {

// Q = S queries per step, H = heads_q, G = heads_kv, R = retrieved entries
// per (query, head): K, or M under full attention. Floats are 4 bytes.

Shape LayerShape::shape() const {
  return {{"M", M}, {"K", K}, {"D", D}, {"S", S}, {"heads_q", heads_q}, {"heads_kv", heads_kv}, {"N", N}};
}

// Q.K^T: every key (and its position) read once, every query read once,
// every logit written once; 2 flops per multiply-add.
Cost score_cost(const LayerShape& s) {
  const double Q = s.S, H = s.heads_q, G = s.heads_kv, M = s.M, D = s.D;
  return {4.0 * (M * G * D + M + Q * H * D + Q * H * M), 2.0 * Q * H * M * D};
}

// Top-K of M logits per (query, head): one read of the logits and the
// positions (ties go to the smaller position), K (key, tie, slot) triples
// written; one comparison per candidate, the least a streaming selection does.
Cost topk_cost(const LayerShape& s) {
  const double Q = s.S, H = s.heads_q, M = s.M, K = s.K;
  return {4.0 * (Q * H * M + M) + 12.0 * Q * H * K, Q * H * M};
}

// Softmax over R logits and the weighted sum of R value rows per (query,
// head): each retrieved logit and slot read, each value row gathered (per
// query head), the output row and the R weights written; 2 flops per
// multiply-add of the sum and 4 for max, subtract, exp and sum per logit.
Cost attend_cost(const LayerShape& s) {
  const double Q = s.S, H = s.heads_q, R = s.retrieved(), D = s.D;
  return {4.0 * (Q * H * R * (2.0 + D) + Q * H * D + Q * H * R), Q * H * R * (2.0 * D + 4.0)};
}

// Dense attention in one pass (K >= M): every key and value row (and its
// position) read once, every query read and every output row and
// log-sum-exp written once; score's and attend's flops, with no logits or
// weights in memory.
Cost flash_attend_cost(const LayerShape& s) {
  const double Q = s.S, H = s.heads_q, G = s.heads_kv, M = s.M, D = s.D;
  return {4.0 * (2.0 * M * G * D + M + 2.0 * Q * H * D + Q * H), Q * H * M * (4.0 * D + 4.0)};
}

// Usage and policy update: the R weights and slots of every (query, head)
// read once, every score read and written once; one add per weight and
// one update per entry and query.
Cost policy_cost(const LayerShape& s) {
  const double Q = s.S, H = s.heads_q, R = s.retrieved(), M = s.M;
  return {8.0 * Q * H * R + 8.0 * M, Q * H * R + Q * M};
}

// The S lowest-scored of M held entries: scores and positions read once,
// S (key, tie, slot) triples written; one comparison per candidate.
Cost evict_select_cost(const LayerShape& s) {
  const double M = s.M, S = s.S;
  return {8.0 * M + 12.0 * S, M};
}

// Compaction and insertion: S key and value rows read from the chunk and
// written into the freed slots, with position, score and tag (4 words per
// row in, 4 out); attention-scored policies also read every score once for
// the new entries' initial score (mu - k sigma: 2 flops per entry).
// Profiling starts before the step's upload, so the first dispatch of a
// step also carries the copy of the chunk into device buffers: the rows of
// queries, keys and values uploaded (counted here, since compaction's
// score_stats or insert_plan is the first dispatch of every layer step).
Cost compact_cost(const LayerShape& s, bool attention_scored) {
  const double S = s.S, G = s.heads_kv, H = s.heads_q, D = s.D, M = s.M;
  const double rows = 2.0 * (S * G * D * 8.0 + S * 16.0);
  const double upload = 2.0 * S * (H * D + 2.0 * G * D) * 4.0;
  return {rows + upload + (attention_scored ? 4.0 * M : 0.0), S + (attention_scored ? 2.0 * M : 0.0)};
}

// C = A W^T (+ bias) (+ R): weights read once, A read, C written (R read).
Cost matmul_cost(uint64_t rows, uint64_t in, uint64_t out, double weight_bytes, bool residual) {
  const double r = static_cast<double>(rows), i = static_cast<double>(in), o = static_cast<double>(out);
  return {i * o * weight_bytes + 4.0 * (r * i + r * o + (residual ? r * o : 0.0)), 2.0 * r * i * o};
}

// RMS or layer norm: rows read and written, gains read; ~4 flops per element.
Cost norm_cost(uint64_t rows, uint64_t cols) {
  const double r = static_cast<double>(rows), c = static_cast<double>(cols);
  return {4.0 * (2.0 * r * c + c), 4.0 * r * c};
}

// Rotary embedding in place: 2 multiplies and 1 add per element (the
// angles' sin and cos are not counted).
Cost rope_cost(uint64_t rows, uint64_t heads, uint64_t head_dim) {
  const double n = static_cast<double>(rows) * static_cast<double>(heads) * static_cast<double>(head_dim);
  return {8.0 * n + 4.0 * static_cast<double>(rows), 3.0 * n};
}

// act(gate) * up (gated) or act(up): inputs read, output written; ~4 flops
// for silu or gelu's exp and division, 1 for the product.
Cost activation_cost(uint64_t rows, uint64_t ffn, bool gated) {
  const double n = static_cast<double>(rows) * static_cast<double>(ffn);
  return {(gated ? 12.0 : 8.0) * n, (gated ? 5.0 : 4.0) * n};
}

// Token rows gathered from the table and written as fp32; one conversion per element.
Cost embedding_cost(uint64_t rows, uint64_t hidden, uint32_t weight_bytes) {
  const double n = static_cast<double>(rows) * static_cast<double>(hidden);
  return {n * (weight_bytes + 4.0) + 4.0 * static_cast<double>(rows), n};
}

Cost add_cost(uint64_t rows, uint64_t cols) {
  const double n = static_cast<double>(rows) * static_cast<double>(cols);
  return {12.0 * n, n};
}

void rate(KernelResult& k, const Limits& limits) {
  const double seconds = k.median_ms * 1e-3;
  k.gbps = k.bytes / seconds * 1e-9;
  k.gflops = k.flops / seconds * 1e-9;
  const double memory_s = k.bytes / (limits.copy_gbps * 1e9), compute_s = k.flops / (limits.fma_gflops * 1e9);
  k.efficiency = std::max(memory_s, compute_s) / seconds;
  k.bound = memory_s >= compute_s ? "memory" : "compute";
  if (k.weight_bytes > 0.0) {
    k.weight_gbps = k.weight_bytes / seconds * 1e-9;
    k.copy_fraction = k.weight_gbps / limits.copy_gbps;
  }
}

}  // namespace bench
