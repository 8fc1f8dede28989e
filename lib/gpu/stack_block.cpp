#include "gpu/stack_block.hpp"

#include "gpu/layouts.hpp"
#include "core/try.hpp"
#include "core/positions.hpp"

#include <attendre/error.hpp>

#include <algorithm>
#include <cstring>

namespace attendre::gpu {
namespace {

using kernels::RowRef;

uint32_t rope_dims(const BlockConfig& b) { return b.rope_dims ? b.rope_dims : b.attention.shape.head_dim; }
uint32_t query_variants(const BlockConfig& b) { return b.lm_infinite.enabled ? kernels::kLmQueryVariants : 1u; }

}  // namespace

Result<FfnLayout> FfnLayout::make(uint32_t rows, uint32_t ffn) {
  FfnLayout l;
  l.rows = rows;
  l.ffn = ffn;
  SectionCursor c;
  l.gate = c.take(uint64_t{rows} * ffn);
  l.up = c.take(uint64_t{rows} * ffn);
  l.words = c.words;
  ATTENDRE_TRY(layout_of(c.status(), {"ffn rows", 0, false, true, "lower the chunk S or ffn"}));
  return l;
}

uint64_t normed_words(const StackConfig& config, uint32_t rows, uint32_t ffn) {
  uint32_t widest = config.hidden;
  if (config.activations == MemoryStorage::f16) {  // also the FFN's activated rows and the attention rows
    widest = std::max(widest, ffn);
    for (const BlockConfig& b : config.blocks) widest = std::max(widest, b.attention.shape.q_row());
  }
  return uint64_t{rows} * activation_row_words(widest, config.activations);
}

uint32_t DeviceBlock::max_queries(const StackConfig& config, size_t index) {
  // Evictions never exceed the rows inserted, except a flush, which hands
  // over all N waiting rows at once.
  const uint32_t rows = config.max_rows_in(index);
  return config.flush_capable ? std::max(rows, config.blocks[index].attention.q_capacity) : rows;
}

Result<BlockFusions> DeviceBlock::fusions(const DeviceCaps& caps, MemoryStorage activations, const BlockConfig& b,
                                          const BlockSpec& spec,
                                          const std::function<Result<ElementType>(const MatrixSpec&)>& types) {
  BlockFusions f;
  if (activations != MemoryStorage::f32) return f;
  const kernels::KernelPlan plan = kernels::plan_kernels(caps);
  // Whether the matrices stack: one encoding of direct products, one row
  // length, no bias, and all their rows in one part.
  auto stacks = [&](std::initializer_list<const MatrixSpec*> specs) -> Result<bool> {
    const MatrixSpec& first = **specs.begin();
    ATTENDRE_TRY_ASSIGN(const ElementType type, types(first));
    uint64_t rows = 0;
    for (const MatrixSpec* m : specs) {
      if (m->bias || m->cols != first.cols) return false;
      ATTENDRE_TRY_ASSIGN(const ElementType t, types(*m));
      if (t != type) return false;
      rows += m->rows;
    }
    if (!kernels::direct_matmul(plan, type)) return false;
    ATTENDRE_TRY_ASSIGN(const std::vector<uint64_t> parts, DeviceMatrix::placed_parts(caps, type, rows, first.cols, false));
    return parts.size() == 1;
  };
  if (b.ffn > 0 && b.gated && spec.gate && spec.up && spec.gate->rows == spec.up->rows) {
    ATTENDRE_TRY_ASSIGN(f.gate_up, stacks({&*spec.gate, &*spec.up}));
  }
  if (!b.cross_attention && !b.lm_infinite.enabled) {
    ATTENDRE_TRY_ASSIGN(f.qkv, stacks({&spec.wq, &spec.wk, &spec.wv}));
  }
  return f;
}

uint64_t DeviceBlock::upload_words(const StackConfig& config, size_t index) {
  return align_words(3ull * config.max_rows_in(index)) + align_words(3ull * config.max_insert(index));  // ring, chunk
}

Result<BlockMemory> DeviceBlock::plan_memory(const StackConfig& config, size_t index, const DeviceCaps& caps,
                                             const std::function<Result<ElementType>(const MatrixSpec&)>& types,
                                             std::vector<PlannedBuffer>* buffers) {
  const BlockConfig& b = config.blocks[index];
  const AttentionShape& s = b.attention.shape;
  ATTENDRE_TRY_ASSIGN(const ModelSpec model, model_spec(config));
  const BlockSpec& spec = model.blocks[index];
  BlockMemory m;
  auto add = [&](uint64_t& total, const std::string& name, uint64_t bytes, bool weights, std::string remedy = "") {
    if (buffers && bytes > 0) buffers->push_back({name, bytes, weights, true, std::move(remedy)});
    total += bytes;
  };
  auto matrix = [&](const std::optional<MatrixSpec>& t) -> Status {
    if (!t) return {};
    ATTENDRE_TRY_ASSIGN(const ElementType type, types(*t));
    ATTENDRE_TRY_ASSIGN(const std::vector<uint64_t> parts,
                        DeviceMatrix::placed_parts(caps, type, t->rows, t->cols, t->bias.has_value()));
    for (size_t i = 0; i < parts.size(); ++i)
      add(m.weights, t->name + (parts.size() > 1 ? " part " + std::to_string(i) : ""), parts[i], true);
    return {};
  };
  auto norm = [&](const std::optional<VectorSpec>& gain, const std::optional<VectorSpec>& shift) {
    if (gain) add(m.weights, gain->name, DeviceNorm::placed_bytes(gain->size, shift.has_value()), true);
  };
  ATTENDRE_TRY_ASSIGN(const BlockFusions fused, fusions(caps, config.activations, b, spec, types));
  // A stack of matrices in one part (WeightLoader::matrix_stack).
  auto stacked = [&](std::initializer_list<const MatrixSpec*> specs) -> Status {
    ATTENDRE_TRY_ASSIGN(const ElementType type, types(**specs.begin()));
    uint64_t rows = 0;
    std::string names;
    for (const MatrixSpec* t : specs) rows += t->rows, names += (names.empty() ? "" : " + ") + t->name;
    ATTENDRE_TRY_ASSIGN(const std::vector<uint64_t> parts,
                        DeviceMatrix::placed_parts(caps, type, rows, (*specs.begin())->cols, false));
    add(m.weights, names, parts[0], true);
    return {};
  };
  // The loader's order (BlockWeights::load), which decides the arena's blocks.
  norm(spec.attn_norm, spec.attn_norm_bias);
  norm(spec.ffn_norm, spec.ffn_norm_bias);
  norm(spec.attn_post_norm, std::nullopt);
  norm(spec.ffn_post_norm, std::nullopt);
  norm(spec.q_norm, std::nullopt);
  norm(spec.k_norm, std::nullopt);
  if (fused.qkv) {
    ATTENDRE_TRY(stacked({&spec.wq, &spec.wk, &spec.wv}));
  } else {
    for (const auto& t : {std::optional<MatrixSpec>(spec.wq), std::optional<MatrixSpec>(spec.wk),
                          std::optional<MatrixSpec>(spec.wv)})
      ATTENDRE_TRY(matrix(t));
  }
  ATTENDRE_TRY(matrix(spec.wo));
  if (fused.gate_up) {
    ATTENDRE_TRY(stacked({&*spec.gate, &*spec.up}));
  } else {
    ATTENDRE_TRY(matrix(spec.gate));
    ATTENDRE_TRY(matrix(spec.up));
  }
  ATTENDRE_TRY(matrix(spec.down));
  const std::string block = "block " + std::to_string(index) + " ";
  add(m.weights, block + "rope angles", BlockWeights::rope_table_bytes(b), true);
  const MemoryStorage storage = b.attention.kv.storage;
  // A layout past 2^32 words is refused as check refuses a buffer past
  // the device's range: named, with what makes it smaller.
  const PlannedBuffer ring_buffer{block + "q ring", 0, false, true, kQueryRingRemedy};
  ATTENDRE_TRY_ASSIGN(const RingLayout ring,
                      layout_of(RingLayout::make(b.attention.q_capacity + config.max_rows_in(index), s,
                                                     config.hidden, query_variants(b), storage,
                                                     config.max_rows_in(index)),
                                ring_buffer));
  add(m.q_memory, ring_buffer.name, ring.words * 4, false, ring_buffer.remedy);
  const uint32_t keys = KvRecorder::key_variants(b.lm_infinite);
  const PlannedBuffer kv_buffer{block + "kv memory", 0, false, true, kKvMemoryRemedy};
  ATTENDRE_TRY_ASSIGN(const KvLayout kv, layout_of(KvLayout::make(b.attention.kv.capacity, s, keys,
                                                                      b.attention.retrieval, storage),
                                                   kv_buffer));
  add(m.kv_memory, kv_buffer.name, kv.words * 4, false, kv_buffer.remedy);
  const PlannedBuffer chunk_buffer{block + "kv chunk", 0, false, true, kKvChunkRemedy};
  ATTENDRE_TRY_ASSIGN(const ChunkLayout chunk,
                      layout_of(ChunkLayout::make(config.max_insert(index), s, keys), chunk_buffer));
  add(m.kv_memory, chunk_buffer.name, chunk.words * 4, false, chunk_buffer.remedy);
  return m;
}

uint64_t BlockWeights::rope_table_bytes(const BlockConfig& config) {
  return config.rope ? WeightLoader::constants_bytes(kernels::kRopeTableHeaderWords + rope_dims(config) / 2) : 0;
}

Result<BlockWeights> BlockWeights::load(WeightLoader& loader, const BlockSpec& t, const BlockConfig& config,
                                        std::span<const double> rope_factors, BlockFusions fusions) {
  BlockWeights w;
  WeightLoader::FinishOnFailure guard(loader);  // w's buffers may receive copies still in flight
  ATTENDRE_TRY_ASSIGN(w.attn_norm, loader.norm(t.attn_norm, t.attn_norm_bias));
  if (t.ffn_norm) {
    ATTENDRE_TRY_ASSIGN(w.ffn_norm, loader.norm(*t.ffn_norm, t.ffn_norm_bias));
  }
  if (t.attn_post_norm) {
    ATTENDRE_TRY_ASSIGN(w.attn_post_norm, loader.norm(*t.attn_post_norm, std::nullopt));
  }
  if (t.ffn_post_norm) {
    ATTENDRE_TRY_ASSIGN(w.ffn_post_norm, loader.norm(*t.ffn_post_norm, std::nullopt));
  }
  if (t.q_norm) {
    ATTENDRE_TRY_ASSIGN(w.q_norm, loader.norm(*t.q_norm, std::nullopt));
    ATTENDRE_TRY_ASSIGN(w.k_norm, loader.norm(*t.k_norm, std::nullopt));
  }
  if (fusions.qkv) {
    ATTENDRE_TRY_ASSIGN(w.qkv, loader.matrix_stack({&t.wq, &t.wk, &t.wv}));
  } else {
    ATTENDRE_TRY_ASSIGN(w.wq, loader.matrix(t.wq));
    ATTENDRE_TRY_ASSIGN(w.wk, loader.matrix(t.wk));
    ATTENDRE_TRY_ASSIGN(w.wv, loader.matrix(t.wv));
  }
  ATTENDRE_TRY_ASSIGN(w.wo, loader.matrix(t.wo));
  if (fusions.gate_up) {
    ATTENDRE_TRY_ASSIGN(w.gate_up, loader.matrix_stack({&*t.gate, &*t.up}));
  } else {
    if (t.gate) {
      ATTENDRE_TRY_ASSIGN(w.gate, loader.matrix(*t.gate));
    }
    if (t.up) {
      ATTENDRE_TRY_ASSIGN(w.up, loader.matrix(*t.up));
    }
  }
  if (t.down) {
    ATTENDRE_TRY_ASSIGN(w.down, loader.matrix(*t.down));
  }
  if (config.rope) {
    ATTENDRE_TRY_ASSIGN(const positions::RopeAngles angles,
                        positions::rope_angles(config.rope_theta, rope_dims(config), config.rope_scaling,
                                               config.rope_scaling.freq_factors ? rope_factors
                                                                                : std::span<const double>{}));
    ATTENDRE_TRY_ASSIGN(w.rope_table, loader.constants(kernels::rope_angle_table(angles), "rope angles"));
  }
  if (t.t5_table) {
    ATTENDRE_TRY_ASSIGN(const std::vector<double> table, loader.values(t.t5_table->name, {t.t5_table->rows, t.t5_table->cols}));
    w.t5_table.assign(table.begin(), table.end());
  }
  guard.succeeded();
  return w;
}

uint64_t BlockWeights::device_bytes() const {
  uint64_t total = vk::MemoryArena::placed_bytes(attn_norm.buffer.size());
  for (const DeviceNorm* n : {&ffn_norm, &attn_post_norm, &ffn_post_norm, &q_norm, &k_norm})
    if (n->buffer) total += vk::MemoryArena::placed_bytes(n->buffer.size());
  for (const DeviceMatrix* m : {&wq, &wk, &wv, &qkv, &wo, &gate, &up, &gate_up, &down}) total += m->device_bytes();
  if (rope_table) total += vk::MemoryArena::placed_bytes(rope_table.size());
  return total;
}

DeviceBlock::DeviceBlock(const StackConfig& config, size_t index, const BlockWeights& weights, SharedBuffers& shared)
    : stack_(config),
      config_(config.blocks[index]),
      attention_(config.attention(index)),
      chunk_rows_(config.max_rows_in(index)),
      insert_rows_(config.max_insert(index)),
      in_(&shared.x[index % 2]),
      out_(&shared.x[1 - index % 2]),
      shared_(shared),
      w_(weights),
      normed_(RowRef::contiguous(activation_row_words(config.hidden, config.activations))),
      rope_dims_(rope_dims(config_)) {}

Result<std::unique_ptr<DeviceBlock>> DeviceBlock::create(Context& context, const StackConfig& config, size_t index,
                                                         const BlockWeights& weights, SharedBuffers& shared) {
  std::unique_ptr<DeviceBlock> block(new DeviceBlock(config, index, weights, shared));
  DeviceBlock& d = *block;
  ATTENDRE_TRY_ASSIGN(d.ring_, QueryRing::create(context, d.attention_.shape, d.attention_.q_capacity, d.chunk_rows_,
                                                 config.hidden, query_variants(d.config_), d.attention_.kv.storage));
  const kernels::KernelPlan plan = kernels::plan_kernels(context.caps());
  const std::string stage = " of block " + std::to_string(index);
  d.attention_.retrieval.t5.table = weights.t5_table;  // the stack's table, from the weights
  ATTENDRE_TRY_ASSIGN(d.kv_, KvRecorder::create(context, d.attention_, max_queries(config, index), d.insert_rows_,
                                              d.ring_->buffer(), d.ring_->layout(), *shared.checks, stage,
                                              shared.scratch.get(), d.config_.lm_infinite));
  ATTENDRE_TRY_ASSIGN(d.output_site_, shared.checks->add("the output rows" + stage, {d.out_}));
  // The attention outputs are checked with the output rows, in one dispatch.
  d.kv_->defer_outputs_check();
  ATTENDRE_TRY_ASSIGN(d.check_pair_, shared.checks->add_pair(d.kv_->outputs_site(), d.output_site_));
  ATTENDRE_REQUIRE(!d.config_.cross_attention || shared.encoder, "a cross-attention block needs an encoder output memory");

  // Each kernel binds exactly the sections it touches, so that work on
  // disjoint sections (the q, k and v projections, the residual and
  // metadata copies) needs no barrier between them.
  d.arena_ = std::make_unique<vk::DescriptorArena>(context);
  vk::DescriptorArena& a = *d.arena_;
  using Section = vk::BufferBinding;
  const BlockConfig& c = d.config_;
  const vk::Buffer& ring = d.ring_->buffer();
  const RingLayout& rl = d.ring_->layout();
  const vk::Buffer& chunk = d.kv_->chunk_buffer();
  const ChunkLayout& cl = d.kv_->chunk_layout();
  const Section queries = d.ring_->query_section();  // fp32 rows: the ring's, or the fp16 ring's incoming section
  const Section keys = Section::words(chunk, cl.keys, uint64_t{cl.rows} * cl.key_stride);
  const Section values = Section::words(chunk, cl.values, uint64_t{cl.rows} * cl.kv_row);
  const FfnLayout& fl = shared.ffn;
  const Section gate = Section::words(shared.gu, fl.gate, uint64_t{fl.rows} * fl.ffn);
  const Section up = Section::words(shared.gu, fl.up, uint64_t{fl.rows} * fl.ffn);
  const MemoryStorage acts = config.activations;
  // A sublayer's norm folds into its products where all of them can take it.
  auto readers_fold_rms = [&](std::initializer_list<const DeviceMatrix*> readers) {
    if (c.norm != NormKind::rms) return false;
    return std::all_of(readers.begin(), readers.end(),
                       [&](const DeviceMatrix* m) { return kernels::folds_rms(plan, m->type(), acts); });
  };
  auto rms_input = [&](const DeviceNorm& norm) { return kernels::RmsInput{{&norm.buffer}, 0, c.norm_eps}; };
  const bool stacked_qkv = weights.qkv.rows() > 0;
  d.rms_in_attention_ = stacked_qkv         ? readers_fold_rms({&weights.qkv})
                        : c.cross_attention ? readers_fold_rms({&weights.wq})
                                            : readers_fold_rms({&weights.wq, &weights.wk, &weights.wv});
  std::optional<kernels::RmsInput> attention_rms;
  if (d.rms_in_attention_) {
    attention_rms = rms_input(weights.attn_norm);
  } else {
    ATTENDRE_TRY_ASSIGN(d.attn_norm_kernel_, kernels::Norm::create(context, a, plan, c.norm, {d.in_},
                                                                   {&weights.attn_norm.buffer}, {&shared.h}, acts));
  }
  const vk::Buffer* attention_source = d.rms_in_attention_ ? d.in_ : &shared.h;
  if (stacked_qkv) {
    // The queries to the ring, the keys and values to the chunk (its keys
    // then its values section, bound as one).
    const Section keys_values = Section::words(chunk, cl.keys, uint64_t{cl.values} + uint64_t{cl.rows} * cl.kv_row - cl.keys);
    const AttentionShape& s = d.attention_.shape;
    ATTENDRE_TRY_ASSIGN(d.qkv_, StackedProjection::create(context, a, plan, weights.qkv, {s.q_row(), s.kv_row(), s.kv_row()},
                                                          {attention_source}, queries, keys_values, acts, attention_rms));
  } else {
    ATTENDRE_TRY_ASSIGN(d.q_, Projection::create(context, a, plan, weights.wq, {attention_source}, queries, {}, acts,
                                                 std::nullopt, attention_rms));
    // Cross-attention keys and values come from the encoder output memory (fp32 rows).
    const vk::Buffer* kv_source = c.cross_attention ? shared.encoder : attention_source;
    const MemoryStorage kv_input = c.cross_attention ? MemoryStorage::f32 : acts;
    const std::optional<kernels::RmsInput> kv_rms = c.cross_attention ? std::nullopt : attention_rms;
    ATTENDRE_TRY_ASSIGN(d.k_, Projection::create(context, a, plan, weights.wk, {kv_source}, keys, {}, kv_input,
                                                 std::nullopt, kv_rms));
    ATTENDRE_TRY_ASSIGN(d.v_, Projection::create(context, a, plan, weights.wv, {kv_source}, values, {}, kv_input,
                                                 std::nullopt, kv_rms));
  }
  // Without an FFN, the attention sublayer's output is the block's output.
  const vk::Buffer* attention_out = c.ffn > 0 ? &shared.y : d.out_;
  const Section residuals = Section::words(ring, rl.residuals, uint64_t{rl.capacity} * rl.residual_width);
  // Post norms: the projection writes the sublayer output alone, normed in
  // place before the residual is added.
  // fp16 activations: Wo reads the attention rows rounded into h, which
  // the q/k/v projections have read.
  const bool half_attention = acts == MemoryStorage::f16;
  if (half_attention) {
    ATTENDRE_TRY_ASSIGN(d.attention_half_, kernels::StoreHalfRows::create(context, a, plan, {&d.kv_->attention_buffer()},
                                                                        {&shared.h}));
  }
  ATTENDRE_TRY_ASSIGN(d.o_, Projection::create(context, a, plan, weights.wo,
                                               half_attention ? Section{&shared.h} : Section{&d.kv_->attention_buffer()},
                                               {attention_out}, c.post_norms ? Section{} : residuals, acts));
  if (c.post_norms) {
    ATTENDRE_TRY_ASSIGN(d.attn_post_norm_kernel_, kernels::Norm::create(context, a, plan, c.norm, {attention_out},
                                                                        {&weights.attn_post_norm.buffer}, {attention_out}));
    ATTENDRE_TRY_ASSIGN(d.attn_residual_, kernels::Add::create(context, a, plan, {attention_out}, residuals, {attention_out}));
  }
  if (c.ffn > 0) {
    const bool fused = weights.gate_up.rows() > 0;
    d.rms_in_ffn_ = fused      ? readers_fold_rms({&weights.gate_up})
                    : c.gated ? readers_fold_rms({&weights.gate, &weights.up})
                              : readers_fold_rms({&weights.up});
    std::optional<kernels::RmsInput> ffn_rms;
    if (d.rms_in_ffn_) {
      ffn_rms = rms_input(weights.ffn_norm);
    } else {
      ATTENDRE_TRY_ASSIGN(d.ffn_norm_kernel_, kernels::Norm::create(context, a, plan, c.norm, {&shared.y},
                                                                    {&weights.ffn_norm.buffer}, {&shared.h}, acts));
    }
    const Section ffn_source = d.rms_in_ffn_ ? Section{&shared.y} : Section{&shared.h};
    if (fused) {
      // The activated rows land in the gate rows, where the down projection reads them (fp32).
      ATTENDRE_TRY_ASSIGN(d.gate_up_proj_, Projection::create(context, a, plan, weights.gate_up, ffn_source, gate, {},
                                                              acts, c.activation, ffn_rms));
    } else {
      if (c.gated) {
        ATTENDRE_TRY_ASSIGN(d.gate_proj_, Projection::create(context, a, plan, weights.gate, ffn_source, gate, {}, acts,
                                                             std::nullopt, ffn_rms));
      }
      ATTENDRE_TRY_ASSIGN(d.up_proj_, Projection::create(context, a, plan, weights.up, ffn_source, c.gated ? up : gate,
                                                         {}, acts, std::nullopt, ffn_rms));
    }
    // fp32: in place, the activated rows replace the gate rows. fp16: they
    // go to h, which the gate and up projections have read.
    const Section activated = acts == MemoryStorage::f16 ? Section{&shared.h} : gate;
    ATTENDRE_TRY_ASSIGN(d.down_proj_, Projection::create(context, a, plan, weights.down, activated, {d.out_},
                                                         c.post_norms ? Section{} : Section{&shared.y}, acts));
    if (c.post_norms) {
      ATTENDRE_TRY_ASSIGN(d.ffn_post_norm_kernel_, kernels::Norm::create(context, a, plan, c.norm, {d.out_},
                                                                         {&weights.ffn_post_norm.buffer}, {d.out_}));
      ATTENDRE_TRY_ASSIGN(d.ffn_residual_, kernels::Add::create(context, a, plan, {d.out_}, {&shared.y}, {d.out_}));
    }
    if (!fused) {
      ATTENDRE_TRY_ASSIGN(d.activation_, kernels::Activation::create(context, a, plan, c.activation, c.gated, {&shared.gu},
                                                                     acts == MemoryStorage::f16 ? Section{&shared.h}
                                                                                                : Section{&shared.gu},
                                                                     acts));
    }
  }
  if (c.qk_norm) {
    ATTENDRE_TRY_ASSIGN(d.q_norm_kernel_, kernels::Norm::create(context, a, plan, NormKind::rms, queries,
                                                              {&weights.q_norm.buffer}, queries));
    ATTENDRE_TRY_ASSIGN(d.k_norm_kernel_, kernels::Norm::create(context, a, plan, NormKind::rms, keys,
                                                              {&weights.k_norm.buffer}, keys));
  }
  if (c.rope) {
    ATTENDRE_TRY_ASSIGN(d.rope_q_, kernels::Rope::create(context, a, plan, c.rope_layout, queries,
                                                         Section::words(ring, rl.positions, rl.capacity),
                                                         {&weights.rope_table}));
    ATTENDRE_TRY_ASSIGN(d.rope_k_, kernels::Rope::create(context, a, plan, c.rope_layout, keys,
                                                         Section::words(chunk, cl.positions, cl.rows),
                                                         {&weights.rope_table}));
    // Queries and the block's own keys turn in one dispatch (LM-Infinite's
    // extra rotations of q stay separate).
    // The keys and their positions share one binding (keys_and_positions_).
    if (!c.cross_attention && !c.lm_infinite.enabled) {
      const uint32_t first = std::min(cl.keys, cl.positions);
      const uint64_t end = std::max(uint64_t{cl.keys} + uint64_t{cl.rows} * cl.key_stride, uint64_t{cl.positions} + cl.rows);
      d.keys_at_ = cl.keys - first;
      d.positions_at_ = cl.positions - first;
      ATTENDRE_TRY_ASSIGN(d.rope_qk_, kernels::Rope::create_pair(context, a, plan, c.rope_layout, queries,
                                                                 Section::words(ring, rl.positions, rl.capacity),
                                                                 {&weights.rope_table}, Section::words(chunk, first, end - first)));
      d.rope_pairs_ = true;
    }
  }
  return block;
}

BlockMemory DeviceBlock::memory() const {
  BlockMemory m;
  m.weights = w_.device_bytes();
  m.q_memory = ring_->buffer().size();
  m.kv_memory = kv_->kv_buffer().size() + kv_->chunk_buffer().size();
  return m;
}

Result<BlockStep> DeviceBlock::plan(std::vector<QueryMeta> in, BlockMode mode) {
  BlockStep step;
  step.mode = mode;
  step.first = ring_->next_sequence();
  if (mode == BlockMode::flush) {
    step.evicted = ring_->take_all();  // getAll: every waiting row retrieves now
    return step;
  }
  ATTENDRE_REQUIRE(in.size() <= chunk_rows_, "a block received more rows than it was sized for");
  if (!config_.cross_attention) {
    const InsertionRows rows = insertion_rows(in, insert_rows_);
    // The config was validated: this cannot fail for positions >= 0.
    ATTENDRE_TRY(kv_->plan_insert(rows.valid, rows.positions));
  }
  step.inserted = in;
  if (mode == BlockMode::decode) {
    ATTENDRE_TRY_ASSIGN(step.evicted, ring_->pass_through(std::move(in)));
  } else {
    step.evicted = ring_->insert(std::move(in));
  }
  return step;
}

namespace {

// The chunk's metadata covers all its rows: rows past the given ones are invalid.
void pack_chunk_meta(const std::vector<QueryMeta>& rows, uint32_t chunk_rows, uint32_t* words) {
  std::memset(words, 0, 3ull * chunk_rows * 4);
  for (size_t r = 0; r < rows.size(); ++r) {
    words[r] = rows[r].valid ? static_cast<uint32_t>(static_cast<int32_t>(rows[r].position)) : 0u;
    words[chunk_rows + r] = rows[r].valid ? 1u : 0u;
    words[2 * chunk_rows + r] = rows[r].tag;
  }
}

}  // namespace

void DeviceBlock::stage(const BlockStep& step, uint32_t* words) const {
  QueryRing::pack_meta(step.inserted, words);
  pack_chunk_meta(step.inserted, insert_rows_, words + align_words(3ull * chunk_rows_));
}

void DeviceBlock::record_chunk_meta(vk::CommandRecorder& rec, uint64_t at) const {
  const ChunkLayout& cl = kv_->chunk_layout();
  const uint64_t n = insert_rows_;
  rec.copy(shared_.upload, at * 4, kv_->chunk_buffer(), uint64_t{cl.positions} * 4, n * 4);
  rec.copy(shared_.upload, (at + n) * 4, kv_->chunk_buffer(), uint64_t{cl.valid} * 4, n * 4);
  rec.copy(shared_.upload, (at + 2 * n) * 4, kv_->chunk_buffer(), uint64_t{cl.tags} * 4, n * 4);
}

Status DeviceBlock::record_load(vk::CommandRecorder& rec, RowRef encoder_rows, const std::vector<int64_t>& positions,
                                uint32_t* upload, uint64_t upload_at) {
  ATTENDRE_REQUIRE(config_.cross_attention, "only cross-attention blocks load the encoder memory");
  ATTENDRE_REQUIRE(positions.size() <= insert_rows_, "the encoder memory holds more rows than the block was sized for");
  const auto n = static_cast<uint32_t>(positions.size());
  std::vector<QueryMeta> rows(n);
  for (uint32_t r = 0; r < n; ++r) rows[r].valid = true, rows[r].position = positions[r];
  const InsertionRows in = insertion_rows(rows, insert_rows_);
  const uint64_t chunk_at = upload_at + align_words(3ull * chunk_rows_);
  pack_chunk_meta(rows, insert_rows_, upload + chunk_at);
  kv_->reset();
  if (n == 0) return {};
  const AttentionShape& s = attention_.shape;
  ATTENDRE_TRY(k_.record(rec, n, encoder_rows, RowRef::contiguous(kv_->chunk_layout().key_stride)));
  ATTENDRE_TRY(v_.record(rec, n, encoder_rows, RowRef::contiguous(s.kv_row())));
  record_chunk_meta(rec, chunk_at);
  return kv_->record_insert(rec, in.valid, in.positions);
}

Status DeviceBlock::record_qk(vk::CommandRecorder& rec, uint32_t n, uint32_t first_row, bool own_keys) const {
  const AttentionShape& s = attention_.shape;
  const RingLayout& ring = ring_->layout();
  const ChunkLayout& chunk = kv_->chunk_layout();
  // Row references are relative to the sections the kernels bind: variant v
  // of a ring row (or chunk row) starts v rows of q (or k) into it.
  auto ring_rows = [&](uint32_t variant) { return ring_->query_rows(first_row, variant); };
  auto key_rows = [&](uint32_t variant) { return RowRef::contiguous(chunk.key_stride, variant * s.kv_row()); };
  const RowRef ring_positions = RowRef::ring(1, ring.capacity, first_row), chunk_positions = RowRef::contiguous(1);
  // LM-Infinite (interface/score.h): q and k land un-rotated in the past
  // variant; the local and future variants are rotated out of it before the
  // query's turns by +n_local in place. Keys keep the un-rotated copy.
  const bool lm = config_.lm_infinite.enabled;
  const RowRef input = attention_input();
  if (w_.qkv.rows() > 0) {
    // Rows relative to the one binding of the chunk's keys and values (neither LM-Infinite nor cross-attention).
    ATTENDRE_TRY(qkv_.record(rec, n, input, ring_rows(kernels::kLmLocal), key_rows(0),
                             RowRef::contiguous(s.kv_row(), chunk.values - chunk.keys)));
  } else {
    ATTENDRE_TRY(q_.record(rec, n, input, ring_rows(lm ? kernels::kLmPast : kernels::kLmLocal)));
    if (own_keys) {
      ATTENDRE_TRY(k_.record(rec, n, input, key_rows(lm ? 1 : 0)));
      ATTENDRE_TRY(v_.record(rec, n, input, RowRef::contiguous(s.kv_row())));
    }
  }
  if (config_.qk_norm) {
    // Each head of the rows just projected, in place, before any rotation.
    const RowRef q_rows = ring_rows(lm ? kernels::kLmPast : kernels::kLmLocal);
    ATTENDRE_TRY(q_norm_kernel_.record(rec, {n, s.head_dim, config_.norm_eps, 0, 0, q_rows, q_rows, s.heads_q}));
    if (own_keys) {
      const RowRef k_rows = key_rows(lm ? 1 : 0);
      ATTENDRE_TRY(k_norm_kernel_.record(rec, {n, s.head_dim, config_.norm_eps, 0, 0, k_rows, k_rows, s.heads_kv}));
    }
  }
  if (!config_.rope) return {};
  if (!lm) {
    const kernels::Rope::Args q{n, s.heads_q, s.head_dim, rope_dims_, ring_rows(0), {}, ring_positions, {}, 0};
    const kernels::Rope::Args k{n, s.heads_kv, s.head_dim, rope_dims_, key_rows(0), {}, chunk_positions, {}, 0};
    if (own_keys && rope_pairs_) {
      // Rows relative to the one binding of keys and positions.
      kernels::Rope::Args paired = k;
      paired.x.offset += keys_at_;
      paired.positions.offset += positions_at_;
      return rope_qk_.record_pair(rec, q, paired);
    }
    ATTENDRE_TRY(rope_q_.record(rec, q));
    if (own_keys) ATTENDRE_TRY(rope_k_.record(rec, k));
    return {};
  }
  const auto cap = static_cast<int32_t>(config_.lm_infinite.n_local);
  const RowRef unrotated = ring_rows(kernels::kLmPast);
  ATTENDRE_TRY(rope_q_.record(rec, {n, s.heads_q, s.head_dim, rope_dims_, unrotated, ring_rows(kernels::kLmLocal), ring_positions, {}, 0}));
  ATTENDRE_TRY(rope_q_.record(rec, {n, s.heads_q, s.head_dim, rope_dims_, unrotated, ring_rows(kernels::kLmFuture), ring_positions, -cap, 0}));
  ATTENDRE_TRY(rope_q_.record(rec, {n, s.heads_q, s.head_dim, rope_dims_, unrotated, {}, ring_positions, cap, 0}));
  if (own_keys) ATTENDRE_TRY(rope_k_.record(rec, {n, s.heads_kv, s.head_dim, rope_dims_, key_rows(1), key_rows(0), chunk_positions, {}, 0}));
  return {};
}

RowRef DeviceBlock::attention_input() const {
  return rms_in_attention_ ? RowRef::contiguous(stack_.hidden) : normed_;
}
RowRef DeviceBlock::ffn_input() const { return rms_in_ffn_ ? RowRef::contiguous(stack_.hidden) : normed_; }

Status DeviceBlock::record_post_norm(vk::CommandRecorder& rec, uint32_t rows, const kernels::Norm& norm,
                                     const kernels::Add& residual, RowRef residual_rows) const {
  const uint32_t H = stack_.hidden;
  ATTENDRE_TRY(norm.record(rec, {rows, H, config_.norm_eps, 0, 0, RowRef::contiguous(H), RowRef::contiguous(H)}));
  return residual.record(rec, {rows, H, RowRef::contiguous(H), residual_rows, RowRef::contiguous(H)});
}

Status DeviceBlock::record(vk::CommandRecorder& rec, const BlockStep& step, uint64_t upload_at) const {
  const uint32_t H = stack_.hidden, n = static_cast<uint32_t>(step.inserted.size());
  const AttentionShape& s = attention_.shape;
  const RingLayout& ring = ring_->layout();
  const uint32_t first_row = ring_->ring_row(step.first);

  if (n > 0) {
    if (!rms_in_attention_) {
      ATTENDRE_TRY(attn_norm_kernel_.record(rec, {n, H, config_.norm_eps, 0, w_.attn_norm.bias_offset,
                                                  RowRef::contiguous(H), normed_}));
    }
    const bool own_keys = !config_.cross_attention;  // cross-attention keys were loaded from the encoder
    ring_->record_rows(rec, *in_, 0, ring.residuals, H, step.first, n);  // the residual waits with its query
    ring_->record_meta(rec, shared_.upload, upload_at, step.first, n);
    if (own_keys) record_chunk_meta(rec, upload_at + align_words(3ull * chunk_rows_));
    ATTENDRE_TRY(record_qk(rec, n, first_row, own_keys));
    ring_->record_store_queries(rec, step.first, n);  // an fp16 ring: rounded once projected and rotated
    if (own_keys) {
      const InsertionRows rows = insertion_rows(step.inserted, insert_rows_);
      ATTENDRE_TRY(kv_->record_insert(rec, rows.valid, rows.positions));
    }
  }

  const QueryRange range = ring_->range_of(step.evicted);
  if (range.count == 0) return {};
  if (range.last_valid == kernels::kInvalid) {
    // Only padding leaves: its rows flow on as zeros and retrieve nothing.
    rec.fill(*out_, 0, uint64_t{range.count} * H * 4, 0u);
    return {};
  }
  // Decoding is causal, except across to the encoder, which is all past.
  ATTENDRE_TRY(kv_->record_retrieve(rec, range, step.mode == BlockMode::decode && !config_.cross_attention));
  const RowRef residual_rows = RowRef::ring(H, ring.capacity, range.ring_first);
  RowRef attention_rows = RowRef::contiguous(s.q_row(), static_cast<uint32_t>(kv_->outputs_offset()));
  if (stack_.activations == MemoryStorage::f16) {
    const uint32_t words = activation_row_words(s.q_row(), MemoryStorage::f16);
    kernels::StoreHalfParams p{};
    p.rows = range.count;
    p.row_floats = s.q_row();
    p.stored_stride = 2 * words;
    p.capacity = range.count;  // rows 0.. of h, no wrap
    ATTENDRE_REQUIRE(kv_->outputs_offset() == 0, "fp16 attention rows are read from the start of the attention buffer");
    attention_half_.record(rec, p);
    attention_rows = RowRef::contiguous(words);
  }
  ATTENDRE_TRY(o_.record(rec, range.count, attention_rows, RowRef::contiguous(H),
                         config_.post_norms ? std::nullopt : std::optional(residual_rows)));
  if (config_.post_norms) ATTENDRE_TRY(record_post_norm(rec, range.count, attn_post_norm_kernel_, attn_residual_, residual_rows));
  if (config_.ffn == 0) {
    record_checks(rec, range.count);
    return {};
  }
  if (!rms_in_ffn_) {
    ATTENDRE_TRY(ffn_norm_kernel_.record(rec, {range.count, H, config_.norm_eps, 0, w_.ffn_norm.bias_offset,
                                               RowRef::contiguous(H), normed_}));
  }
  const uint32_t F = config_.ffn;
  const FfnLayout& fl = shared_.ffn;
  // The projections bind their own section; the activation binds both and
  // writes the gate rows in place (fp32), or fp16 rows into h, which the
  // down projection binds whole. Each row reference is relative to the
  // binding of the kernel it is given to.
  const RowRef section = RowRef::contiguous(F);
  const bool half = stack_.activations == MemoryStorage::f16;
  const RowRef half_rows = RowRef::contiguous(activation_row_words(F, MemoryStorage::f16));
  if (w_.gate_up.rows() > 0) {
    ATTENDRE_TRY(gate_up_proj_.record(rec, range.count, ffn_input(), section));  // gate, up and activation at once
  } else {
    if (config_.gated) ATTENDRE_TRY(gate_proj_.record(rec, range.count, ffn_input(), section));
    ATTENDRE_TRY(up_proj_.record(rec, range.count, ffn_input(), section));
    ATTENDRE_TRY(activation_.record(rec, {range.count, F, RowRef::contiguous(F, fl.gate), RowRef::contiguous(F, fl.up),
                                          half ? half_rows : RowRef::contiguous(F, fl.gate)}));
  }
  ATTENDRE_TRY(down_proj_.record(rec, range.count, half ? half_rows : section, RowRef::contiguous(H),
                                 config_.post_norms ? std::nullopt : std::optional(RowRef::contiguous(H))));
  if (config_.post_norms) ATTENDRE_TRY(record_post_norm(rec, range.count, ffn_post_norm_kernel_, ffn_residual_, RowRef::contiguous(H)));
  record_checks(rec, range.count);
  return {};
}

void DeviceBlock::record_checks(vk::CommandRecorder& rec, uint32_t rows) const {
  shared_.checks->record_pair(rec, check_pair_, 0, rows * attention_.shape.q_row(), 0, rows * stack_.hidden);
}

}  // namespace attendre::gpu
