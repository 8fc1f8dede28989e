#include "gpu/stack_block.hpp"

#include "gpu/layouts.hpp"

#include <attendre/error.hpp>

#include <algorithm>
#include <cstring>

namespace attendre::gpu {
namespace {

using kernels::RowRef;

const Tensor* optional(const std::optional<Tensor>& t) { return t ? &*t : nullptr; }

}  // namespace

uint32_t DeviceBlock::max_queries(const StackConfig& config, size_t index) {
  // Evictions never exceed the rows inserted, except a flush, which hands
  // over all N waiting rows at once.
  const uint32_t rows = config.max_rows_in(index);
  return config.flush_capable ? std::max(rows, config.blocks[index].attention.q_capacity) : rows;
}

uint64_t DeviceBlock::upload_words(const StackConfig& config, size_t index) {
  return 2 * align_words(3ull * config.max_rows_in(index));  // ring meta, chunk meta
}

BlockMemory DeviceBlock::plan_memory(const StackConfig& config, size_t index, const DeviceCaps& caps) {
  const BlockConfig& b = config.blocks[index];
  const AttentionShape& s = b.attention.shape;
  const uint64_t H = config.hidden;
  const bool layer_norm = b.norm == NormKind::layer;
  BlockMemory m;
  m.weights = 2 * DeviceNorm::bytes(H, layer_norm) +
              DeviceMatrix::bytes(caps, config.weights, s.q_row(), H, b.qkv_bias) +
              2 * DeviceMatrix::bytes(caps, config.weights, s.kv_row(), H, b.qkv_bias) +
              DeviceMatrix::bytes(caps, config.weights, H, s.q_row(), b.output_bias) +
              (b.gated ? DeviceMatrix::bytes(caps, config.weights, b.ffn, H, b.ffn_bias) : 0) +
              DeviceMatrix::bytes(caps, config.weights, b.ffn, H, b.ffn_bias) +
              DeviceMatrix::bytes(caps, config.weights, H, b.ffn, b.ffn_bias);
  const uint32_t rows = config.max_rows_in(index);
  m.q_memory = RingLayout::make(b.attention.q_capacity + rows, s, config.hidden).words * 4;
  m.kv_memory = (KvLayout::make(b.attention.kv.capacity, s).words + ChunkLayout::make(rows, s).words) * 4;
  return m;
}

DeviceBlock::DeviceBlock(Context& context, const StackConfig& config, size_t index, const BlockTensors& t,
                         Uploader& uploader, SharedBuffers& shared)
    : stack_(config),
      config_(config.blocks[index]),
      attention_(config.attention(index)),
      chunk_rows_(config.max_rows_in(index)),
      in_(&shared.x[index % 2]),
      out_(&shared.x[1 - index % 2]),
      shared_(shared),
      ring_(context, attention_.shape, attention_.q_capacity, chunk_rows_, config.hidden) {
  const KernelPlan plan = plan_kernels(context.caps());
  kv_ = std::make_unique<KvMemory>(context, attention_, max_queries(config, index), chunk_rows_, ring_.buffer(),
                                   ring_.layout(), shared.scratch.get());
  const WeightType type = config.weights;
  attn_norm_ = DeviceNorm(context, uploader, t.attn_norm, optional(t.attn_norm_bias));
  ffn_norm_ = DeviceNorm(context, uploader, t.ffn_norm, optional(t.ffn_norm_bias));
  wq_ = DeviceMatrix(context, uploader, type, t.wq, optional(t.bq));
  wk_ = DeviceMatrix(context, uploader, type, t.wk, optional(t.bk));
  wv_ = DeviceMatrix(context, uploader, type, t.wv, optional(t.bv));
  wo_ = DeviceMatrix(context, uploader, type, t.wo, optional(t.bo));
  if (t.gate) gate_ = DeviceMatrix(context, uploader, type, *t.gate, optional(t.bgate));
  up_ = DeviceMatrix(context, uploader, type, t.up, optional(t.bup));
  wdown_ = DeviceMatrix(context, uploader, type, t.down, optional(t.bdown));

  arena_ = std::make_unique<vk::DescriptorArena>(context);
  vk::DescriptorArena& a = *arena_;
  const vk::Buffer& chunk = kv_->chunk_buffer();
  attn_norm_kernel_ = kernels::Norm(context, a, plan, config_.norm, {in_}, {&attn_norm_.buffer}, {&shared.h});
  ffn_norm_kernel_ = kernels::Norm(context, a, plan, config_.norm, {&shared.y}, {&ffn_norm_.buffer}, {&shared.h});
  q_ = Projection(context, a, plan, wq_, {&shared.h}, {&ring_.buffer()});
  k_ = Projection(context, a, plan, wk_, {&shared.h}, {&chunk});
  v_ = Projection(context, a, plan, wv_, {&shared.h}, {&chunk});
  o_ = Projection(context, a, plan, wo_, {&kv_->attention_buffer()}, {&shared.y}, {&ring_.buffer()});
  if (config_.gated) gate_proj_ = Projection(context, a, plan, gate_, {&shared.h}, {&shared.gu});
  up_proj_ = Projection(context, a, plan, up_, {&shared.h}, {&shared.gu});
  down_proj_ = Projection(context, a, plan, wdown_, {&shared.gu}, {out_}, {&shared.y});
  if (config_.rope) {
    rope_q_ = kernels::Rope(context, a, plan, config_.rope_layout, {&ring_.buffer()}, {&ring_.buffer()});
    rope_k_ = kernels::Rope(context, a, plan, config_.rope_layout, {&chunk}, {&chunk});
  }
  activation_ = kernels::Activation(context, a, plan, config_.activation, config_.gated, {&shared.gu}, {&shared.gu});
}

BlockMemory DeviceBlock::memory() const {
  BlockMemory m;
  m.weights = attn_norm_.buffer.size() + ffn_norm_.buffer.size();
  for (const DeviceMatrix* w : {&wq_, &wk_, &wv_, &wo_, &gate_, &up_, &wdown_}) m.weights += w->device_bytes();
  m.q_memory = ring_.buffer().size();
  m.kv_memory = kv_->kv_buffer().size() + kv_->chunk_buffer().size();
  return m;
}

BlockStep DeviceBlock::plan(std::vector<QueryMeta> in, BlockMode mode) {
  BlockStep step;
  step.mode = mode;
  step.first = ring_.next_sequence();
  if (mode == BlockMode::flush) {
    step.evicted = ring_.take_all();  // getAll: every waiting row retrieves now
    return step;
  }
  require(in.size() <= chunk_rows_, "a block received more rows than it was sized for");
  std::vector<uint8_t> valid(chunk_rows_, 0);
  std::vector<int64_t> positions(chunk_rows_, 0);
  for (size_t r = 0; r < in.size(); ++r) valid[r] = in[r].valid, positions[r] = in[r].position;
  kv_->plan_insert(valid, positions);  // the config was validated: this cannot fail for positions >= 0
  step.inserted = in;
  step.evicted = mode == BlockMode::decode ? ring_.pass_through(std::move(in)) : ring_.insert(std::move(in));
  return step;
}

void DeviceBlock::stage(const BlockStep& step, uint32_t* words) const {
  const uint64_t half = align_words(3ull * chunk_rows_);
  std::memset(words, 0, 2 * half * 4);
  QueryRing::pack_meta(step.inserted, words);
  // The chunk's metadata covers all its rows: rows past the inserted ones are invalid.
  uint32_t* chunk = words + half;
  for (size_t r = 0; r < step.inserted.size(); ++r) {
    const QueryMeta& m = step.inserted[r];
    chunk[r] = m.valid ? static_cast<uint32_t>(static_cast<int32_t>(m.position)) : 0u;
    chunk[chunk_rows_ + r] = m.valid ? 1u : 0u;
    chunk[2 * chunk_rows_ + r] = m.tag;
  }
}

void DeviceBlock::record(vk::CommandRecorder& rec, const BlockStep& step, uint64_t upload_at) const {
  const uint32_t H = stack_.hidden, n = static_cast<uint32_t>(step.inserted.size());
  const AttentionShape& s = attention_.shape;
  const RingLayout& ring = ring_.layout();
  const ChunkLayout& cl = kv_->chunk_layout();
  const uint32_t first_row = ring_.ring_row(step.first);

  if (n > 0) {
    attn_norm_kernel_.record(rec, {n, H, config_.norm_eps, 0, attn_norm_.bias_offset, RowRef::contiguous(H),
                                   RowRef::contiguous(H)});
    rec.barrier("the projections read the normed rows");
    q_.record(rec, n, RowRef::contiguous(H), RowRef::ring(s.q_row(), ring.capacity, first_row, ring.queries));
    k_.record(rec, n, RowRef::contiguous(H), RowRef::contiguous(s.kv_row(), cl.keys));
    v_.record(rec, n, RowRef::contiguous(H), RowRef::contiguous(s.kv_row(), cl.values));
    ring_.record_rows(rec, *in_, 0, ring.residuals, H, step.first, n);  // the residual waits with its query
    const uint64_t half = align_words(3ull * chunk_rows_);
    ring_.record_meta(rec, shared_.upload, upload_at, step.first, n);
    rec.copy(shared_.upload, (upload_at + half) * 4, kv_->chunk_buffer(), uint64_t{cl.positions} * 4, chunk_rows_ * 4ull);
    rec.copy(shared_.upload, (upload_at + half + chunk_rows_) * 4, kv_->chunk_buffer(), uint64_t{cl.valid} * 4,
             chunk_rows_ * 4ull);
    rec.copy(shared_.upload, (upload_at + half + 2ull * chunk_rows_) * 4, kv_->chunk_buffer(), uint64_t{cl.tags} * 4,
             chunk_rows_ * 4ull);
    rec.barrier("RoPE and insertion read the projected rows and their positions");
    if (config_.rope) {
      const uint32_t dims = config_.rope_dims ? config_.rope_dims : s.head_dim;
      rope_q_.record(rec, {n, s.heads_q, s.head_dim, dims, config_.rope_theta,
                           RowRef::ring(s.q_row(), ring.capacity, first_row, ring.queries),
                           RowRef::ring(1, ring.capacity, first_row, ring.positions)});
      rope_k_.record(rec, {n, s.heads_kv, s.head_dim, dims, config_.rope_theta, RowRef::contiguous(s.kv_row(), cl.keys),
                           RowRef::contiguous(1, cl.positions)});
      rec.barrier("insertion and retrieval read rotated keys and queries");
    }
    std::vector<uint8_t> valid(chunk_rows_, 0);
    std::vector<int64_t> positions(chunk_rows_, 0);
    for (uint32_t r = 0; r < n; ++r) valid[r] = step.inserted[r].valid, positions[r] = step.inserted[r].position;
    kv_->record_insert(rec, valid, positions);
  }

  const QueryRange range = ring_.range_of(step.evicted);
  if (range.count == 0) return;
  if (range.last_valid == 0xFFFFFFFFu) {
    // Only padding leaves: its rows flow on as zeros and retrieve nothing.
    rec.fill(*out_, 0, uint64_t{range.count} * H * 4, 0u);
    rec.barrier("the next block reads the padding rows");
    return;
  }
  kv_->record_retrieve(rec, range, step.mode == BlockMode::decode);
  o_.record(rec, range.count, RowRef::contiguous(s.q_row(), static_cast<uint32_t>(kv_->outputs_offset())),
            RowRef::contiguous(H), RowRef::ring(H, ring.capacity, range.ring_first, ring.residuals));
  rec.barrier("the FFN norm reads the attention block's output");
  ffn_norm_kernel_.record(rec, {range.count, H, config_.norm_eps, 0, ffn_norm_.bias_offset, RowRef::contiguous(H),
                                RowRef::contiguous(H)});
  rec.barrier("the FFN projections read the normed rows");
  const uint32_t F = config_.ffn;
  const RowRef gate = RowRef::contiguous(2 * F, 0), up = RowRef::contiguous(2 * F, F);
  if (config_.gated) gate_proj_.record(rec, range.count, RowRef::contiguous(H), gate);
  up_proj_.record(rec, range.count, RowRef::contiguous(H), config_.gated ? up : gate);
  rec.barrier("the activation reads the FFN projections");
  activation_.record(rec, {range.count, F, gate, up, gate});
  rec.barrier("the down projection reads the activations");
  down_proj_.record(rec, range.count, gate, RowRef::contiguous(H), RowRef::contiguous(H));
  rec.barrier("the next block reads this block's output rows");
}

}  // namespace attendre::gpu
