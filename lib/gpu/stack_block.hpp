// One transformer block of the device stack: its weights, its Q ring (query
// rows and the residual rows waiting with them), its K/V memory, and the
// kernels bound to them. plan() does the host bookkeeping of one step;
// record() appends the block's GPU work for that step.
#pragma once

#include "gpu/device_tensors.hpp"
#include "gpu/kv_recorder.hpp"
#include "gpu/query_ring.hpp"
#include "gpu/retrieval_scratch.hpp"
#include "kernels/activation.hpp"
#include "kernels/add.hpp"
#include "kernels/norm.hpp"
#include "kernels/rope.hpp"
#include "kernels/store_half.hpp"

#include <attendre/gpu_stack.hpp>

#include <functional>

namespace attendre::gpu {

// The FFN rows in SharedBuffers::gu: gate rows [rows][ffn], then up rows
// [rows][ffn], as two sections so that the gate and up projections write
// disjoint ranges and need no barrier between them.
struct FfnLayout {
  uint32_t rows = 0, ffn = 0;
  uint32_t gate = 0, up = 0;
  uint64_t words = 0;
  static Result<FfnLayout> make(uint32_t rows, uint32_t ffn);
};

// Words of one activation row of `cols` values stored as `storage`
// (StackConfig::activations; fp16: pairs packed in words, input_rows.glsl).
inline uint32_t activation_row_words(uint32_t cols, MemoryStorage storage) {
  return storage == MemoryStorage::f16 ? (cols + 1) / 2 : cols;
}
// Words of SharedBuffers::h for `rows` rows of a stack whose widest FFN is `ffn`.
uint64_t normed_words(const StackConfig& config, uint32_t rows, uint32_t ffn);

// Buffers every block of a stack shares: blocks run one after another.
struct SharedBuffers {
  vk::Buffer x[2];   // block inputs and outputs [rows][hidden], alternating per block
  // The activations the products read, stored as StackConfig::activations:
  // normed rows [rows][hidden]; with fp16 activations also the FFN's
  // activated rows [rows][ffn] (h is free once the gate and up projections
  // have read it), which fp32 activations keep in place of the gate rows.
  vk::Buffer h;
  vk::Buffer y;      // after attention and its residual [rows][hidden]
  vk::Buffer gu;     // FFN rows (FfnLayout)
  FfnLayout ffn;
  vk::Buffer upload; // host-visible per-step data
  std::unique_ptr<RetrievalScratch> scratch;
  std::unique_ptr<FiniteChecks> checks;  // NaN/inf checks of every block's results
  // The encoder output memory rows cross-attention blocks load from (a
  // decoder's stack only).
  const vk::Buffer* encoder = nullptr;
};

// Which of a block's matrices are stacked into one (DeviceBlock::fusions).
struct BlockFusions {
  bool gate_up = false;  // [gate; up]: gate, up and the activation in one gated product
  bool qkv = false;      // [wq; wk; wv]: the attention's three projections in one split product
};

// One block's weights, loaded before any kernel is built from them (so that
// a failure while building leaves no copy in flight into freed buffers).
struct BlockWeights {
  DeviceNorm attn_norm, ffn_norm;
  DeviceNorm attn_post_norm, ffn_post_norm;  // BlockConfig::post_norms
  DeviceNorm q_norm, k_norm;    // per-head q/k norm gains (BlockConfig::qk_norm)
  DeviceMatrix wq, wk, wv, wo, gate, up, down;
  // Where DeviceBlock::fusions says so: [gate; up] as one matrix (gate and
  // up then stay empty), multiplied with the activation in one gated
  // product; [wq; wk; wv] as one (wq, wk and wv then stay empty),
  // multiplied in one split product (StackedProjection).
  DeviceMatrix gate_up, qkv;
  vk::Buffer rope_table;        // kernels::rope_angle_table of the block's RoPE (RoPE blocks)
  std::vector<float> t5_table;  // [num_buckets][heads_q], for the K/V memory to upload (T5 bias)
  // `rope_factors`: rope_freqs.weight, for blocks whose scaling reads it.
  static Result<BlockWeights> load(WeightLoader& loader, const BlockSpec& spec, const BlockConfig& config,
                           std::span<const double> rope_factors, BlockFusions fusions = {});
  static uint64_t rope_table_bytes(const BlockConfig& config);
  uint64_t device_bytes() const;
};

enum class BlockMode { stream, flush, decode };

// The host's plan of one block in one step.
struct BlockStep {
  BlockMode mode = BlockMode::stream;
  uint64_t first = 0;                 // ring sequence of the first inserted row
  std::vector<QueryMeta> inserted;    // rows entering the block (valid or not)
  std::vector<QueryMeta> evicted;     // rows leaving it, to the next block
};

class DeviceBlock {
 public:
  // `weights` must outlive the block. Fails as the K/V memory and kernels
  // it makes (nothing is left behind).
  static Result<std::unique_ptr<DeviceBlock>> create(Context& context, const StackConfig& config, size_t index,
                                                     const BlockWeights& weights, SharedBuffers& shared);

  // Bytes allocated for a block of this config (its weights in the encodings
  // `types` gives per tensor), and the upload words its metadata needs per
  // step. `buffers` (if given) gets each buffer, weights in loading order.
  static Result<BlockMemory> plan_memory(const StackConfig& config, size_t index, const DeviceCaps& caps,
                                         const std::function<Result<ElementType>(const MatrixSpec&)>& types,
                                         std::vector<PlannedBuffer>* buffers = nullptr);
  static uint64_t upload_words(const StackConfig& config, size_t index);
  // Which matrices the block stacks, all under direct products (CPU
  // devices), fp32 activations, the stacked matrices in one encoding
  // without biases, fitting one storage range together:
  // gate_up: the gated FFN runs gate, up and the activation as one gated
  //   product over [gate; up] (kernels::Matmul's `gated`);
  // qkv: the block's own q, k and v come from one product over
  //   [wq; wk; wv] (StackedProjection), neither cross-attention nor
  //   LM-Infinite (whose keys keep two variants).
  static Result<BlockFusions> fusions(const DeviceCaps& caps, MemoryStorage activations, const BlockConfig& config,
                                      const BlockSpec& spec,
                                      const std::function<Result<ElementType>(const MatrixSpec&)>& types);
  static uint32_t max_queries(const StackConfig& config, size_t index);
  // Finite-check sites one block registers (attention outputs, policy scores, output rows).
  static constexpr uint32_t kFiniteSites = 3;

  // Fails (changing nothing) when the rows do not fit the block or its
  // memories; commits the step otherwise.
  Result<BlockStep> plan(std::vector<QueryMeta> in, BlockMode mode);
  // Writes the step's metadata at `words` (upload_words() of them).
  void stage(const BlockStep& step, uint32_t* words) const;
  // Records the block: input rows in x[index % 2], output rows in x[1 - index % 2].
  Status record(vk::CommandRecorder& rec, const BlockStep& step, uint64_t upload_at) const;

  // Cross-attention blocks: replaces the K/V memory with keys and values
  // projected from `rows` encoder output rows at `encoder_rows` of the
  // shared encoder buffer; `positions` are theirs, oldest first. The chunk
  // metadata is staged at `upload` words (upload_words() of them).
  Status record_load(vk::CommandRecorder& rec, kernels::RowRef encoder_rows, const std::vector<int64_t>& positions,
                   uint32_t* upload, uint64_t upload_at);
  bool cross() const { return config_.cross_attention; }

  bool has_pending() const { return ring_->has_pending(); }
  KvRecorder& kv() { return *kv_; }
  BlockMemory memory() const;

 private:
  DeviceBlock(const StackConfig& config, size_t index, const BlockWeights& weights, SharedBuffers& shared);
  // Copies packed chunk metadata (positions, valid, tags) from the upload.
  void record_chunk_meta(vk::CommandRecorder& rec, uint64_t upload_at) const;
  // Projects the `n` inserted rows' queries into the ring from `first_row`
  // on, and (own_keys) their keys into the chunk, rotated as the K/V memory
  // scores them: by position, or in LM-Infinite's variants.
  Status record_qk(vk::CommandRecorder& rec, uint32_t n, uint32_t first_row, bool own_keys) const;
  // The rows the q, k and v (or gate and up) projections read: the normed
  // rows in SharedBuffers::h, or the sublayer's input rows they normalize.
  kernels::RowRef attention_input() const;
  kernels::RowRef ffn_input() const;
  // Post norms: the sublayer output rows (rows 0.. of the norm's and the
  // add's output binding) normed in place, then `residual_rows` added.
  // The finite checks of the attention outputs and the output rows of
  // `rows` rows, in one dispatch once both are written.
  void record_checks(vk::CommandRecorder& rec, uint32_t rows) const;
  Status record_post_norm(vk::CommandRecorder& rec, uint32_t rows, const kernels::Norm& norm,
                          const kernels::Add& residual, kernels::RowRef residual_rows) const;

  const StackConfig& stack_;
  BlockConfig config_;
  LayerConfig attention_;
  uint32_t chunk_rows_;   // rows entering per step
  uint32_t insert_rows_;  // rows of one K/V insertion (the whole encoder memory for cross-attention)
  const vk::Buffer* in_;
  const vk::Buffer* out_;
  SharedBuffers& shared_;
  const BlockWeights& w_;
  kernels::RowRef normed_;  // rows of SharedBuffers::h holding normed rows (fp32 or packed fp16)
  std::unique_ptr<QueryRing> ring_;
  std::unique_ptr<KvRecorder> kv_;
  std::unique_ptr<vk::DescriptorArena> arena_;
  kernels::Norm attn_norm_kernel_, ffn_norm_kernel_;
  // Where every product reading a sublayer's normed rows can normalize
  // them itself (kernels::RmsInput: RMSNorm, fp32 activations, the direct
  // kernels), the norm has no dispatch: the products read the block's
  // input rows (attention) or y (FFN) with the norm's gains. Its kernel
  // is then not made.
  bool rms_in_attention_ = false, rms_in_ffn_ = false;
  // post_norms: each sublayer's output is normed in place, then its residual added.
  kernels::Norm attn_post_norm_kernel_, ffn_post_norm_kernel_;
  kernels::Add attn_residual_, ffn_residual_;
  kernels::Norm q_norm_kernel_, k_norm_kernel_;  // in place on the projected q and k rows (qk_norm)
  Projection q_, k_, v_, o_, gate_proj_, up_proj_, down_proj_;
  Projection gate_up_proj_;  // the gated product, where the weights hold gate_up
  StackedProjection qkv_;    // q, k and v at once, where the weights hold qkv
  // fp16 activations: the attention rows rounded into h for o_ to read.
  kernels::StoreHalfRows attention_half_;
  kernels::Rope rope_q_, rope_k_;
  kernels::Rope rope_qk_;  // both in one dispatch, where rope_pairs_ (not LM-Infinite, own keys)
  bool rope_pairs_ = false;
  uint32_t keys_at_ = 0, positions_at_ = 0;  // words into rope_qk_'s binding of the chunk's keys and positions
  uint32_t rope_dims_ = 0;
  kernels::Activation activation_;
  uint32_t output_site_ = 0;  // the finite check of this block's output rows
  uint32_t check_pair_ = 0;   // ... paired with the attention outputs' (FiniteChecks::add_pair)
};

}  // namespace attendre::gpu
