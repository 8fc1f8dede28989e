// The device stack: plans every block's step on the host, then records the
// whole stack (embedding, blocks, final norm, LM head, readback copies) into
// one command buffer and submits it once.
#include "gpu/stack_impl.hpp"

#include "core/model_weights.hpp"

#include <attendre/error.hpp>
#include <attendre/gpu_stack.hpp>

#include <cstring>
#include <functional>
#include <limits>

namespace attendre::gpu {
namespace {

using kernels::RowRef;

uint32_t max_ffn(const StackConfig& config) {
  uint32_t f = 1;
  for (const BlockConfig& b : config.blocks) f = std::max(f, b.ffn);
  return f;
}

ScratchWords scratch_words(const StackConfig& config, const DeviceCaps& caps) {
  ScratchWords words;
  const kernels::KernelPlan plan = kernels::plan_kernels(caps);
  for (size_t l = 0; l < config.blocks.size(); ++l) {
    LayerConfig c = config.attention(l);
    words = words.max(plan_retrieval(c, plan, DeviceBlock::max_queries(config, l), caps).words);
  }
  return words;
}

uint64_t activation_bytes(const StackConfig& c) {
  const uint64_t rows = max_rows(c);
  // x[2], h, y, gu, then the final norm rows and logits.
  const uint64_t ffn = FfnLayout::make(static_cast<uint32_t>(rows), max_ffn(c)).words;
  return (4 * rows * c.hidden + ffn + rows * c.hidden + rows * c.vocab) * 4;
}

void check_range(const DeviceCaps& caps, uint64_t bytes, const std::string& what) {
  if (bytes > caps.max_storage_range)
    fail(ErrorCode::unsupported, what + " needs " + std::to_string(bytes >> 20) +
                                     " MiB, over the device's storage-buffer range of " +
                                     std::to_string(caps.max_storage_range >> 20) + " MiB");
}

}  // namespace

uint64_t StackMemory::total() const {
  uint64_t t = model + scratch + activations + staging;
  for (const BlockMemory& b : blocks) t += b.total();
  return t;
}

StackMemory plan_stack_memory(const StackConfig& config, const DeviceCaps& caps) {
  config.validate();
  StackMemory m;
  for (size_t l = 0; l < config.blocks.size(); ++l) m.blocks.push_back(DeviceBlock::plan_memory(config, l, caps));
  const uint64_t H = config.hidden;
  m.model = DeviceNorm::bytes(H, config.final_norm == NormKind::layer);
  if (config.vocab > 0) {
    m.model += DeviceMatrix::bytes(caps, config.weights, config.vocab, H, false);
    if (!config.tied_embeddings) m.model += DeviceMatrix::bytes(caps, config.weights, config.vocab, H, false);
  }
  const ScratchWords s = scratch_words(config, caps);
  m.scratch = (s.logits + s.lists + s.attention + s.usage) * 4;
  m.activations = activation_bytes(config);
  m.staging = (UploadPlan(config).words + ReadbackPlan(config).words) * 4;
  return m;
}

Stack::Impl::Impl(Context& ctx, const StackConfig& c, WeightSource& weights, const vk::Buffer* encoder_rows)
    : context(ctx), config((c.validate(), c)), upload_plan(c), readback_plan(c), submission(ctx) {
  shared.encoder = encoder_rows;
  const DeviceCaps& caps = ctx.caps();
  const uint32_t rows = max_rows(c), H = c.hidden, F = max_ffn(c);
  shared.ffn = FfnLayout::make(rows, F);
  check_range(caps, shared.ffn.words * 4, "the FFN rows");
  check_range(caps, uint64_t{rows} * c.vocab * 4, "the logits of one step");
  const ModelTensors tensors = load_model(c, weights);

  for (vk::Buffer& x : shared.x) x = vk::Buffer(ctx, uint64_t{rows} * H * 4, vk::MemoryIntent::device, "block rows");
  shared.h = vk::Buffer(ctx, uint64_t{rows} * H * 4, vk::MemoryIntent::device, "normed rows");
  shared.y = vk::Buffer(ctx, uint64_t{rows} * H * 4, vk::MemoryIntent::device, "attention block rows");
  shared.gu = vk::Buffer(ctx, shared.ffn.words * 4, vk::MemoryIntent::device, "ffn rows");
  shared.upload = vk::Buffer(ctx, upload_plan.words * 4, vk::MemoryIntent::upload, "stack upload");
  shared.scratch = std::make_unique<RetrievalScratch>(ctx, scratch_words(c, caps));
  shared.checks = std::make_unique<FiniteChecks>(ctx, DeviceBlock::kFiniteSites * c.blocks.size() + 1);
  final_rows = vk::Buffer(ctx, uint64_t{rows} * H * 4, vk::MemoryIntent::device, "final rows");
  logits = vk::Buffer(ctx, uint64_t{rows} * c.vocab * 4, vk::MemoryIntent::device, "logits");
  readback = vk::Buffer(ctx, readback_plan.words * 4, vk::MemoryIntent::readback, "stack readback");

  uploader = std::make_unique<Uploader>(ctx);
  output_norm = DeviceNorm(ctx, *uploader, tensors.output_norm, tensors.output_norm_bias ? &*tensors.output_norm_bias : nullptr);
  if (c.vocab > 0) {
    embedding_table = DeviceMatrix(ctx, *uploader, c.weights, *tensors.token_embd, nullptr);
    if (embedding_table.parts().size() != 1)
      fail(ErrorCode::unsupported, "the token embedding table exceeds one storage-buffer range");
    if (!c.tied_embeddings) output = DeviceMatrix(ctx, *uploader, c.weights, *tensors.output, nullptr);
  }
  for (size_t l = 0; l < c.blocks.size(); ++l)
    blocks.push_back(std::make_unique<DeviceBlock>(ctx, config, l, tensors.blocks[l], *uploader, shared));

  const kernels::KernelPlan plan = kernels::plan_kernels(caps);
  arena = std::make_unique<vk::DescriptorArena>(ctx);
  const vk::Buffer& last = shared.x[c.blocks.size() % 2];  // the last block's output rows
  final_norm = kernels::Norm(ctx, *arena, plan, c.final_norm, {&last}, {&output_norm.buffer}, {&final_rows});
  if (c.vocab > 0) {
    embed = kernels::Embedding(ctx, *arena, plan, c.weights,
                               {&shared.upload, upload_plan.input * 4, uint64_t{c.chunk} * 4},
                               {&embedding_table.parts()[0].buffer}, {&shared.x[0]});
    head = Projection(ctx, *arena, plan, c.tied_embeddings ? embedding_table : output, {&final_rows}, {&logits});
    logits_site = shared.checks->add("the logits", {&logits});
  }
}

void Stack::Impl::finish_pending() {
  submission.wait();
  if (!unverified) return;
  unverified = false;
  shared.checks->verify("step " + std::to_string(steps - 1));
}

std::vector<QueryMeta> Stack::Impl::stage_input(const StackChunk* chunk, uint32_t rows) {
  auto* words = static_cast<uint32_t*>(shared.upload.mapped()) + upload_plan.input;
  auto* floats = reinterpret_cast<float*>(words);
  const uint32_t H = config.hidden;
  std::vector<QueryMeta> metas(rows);
  for (uint32_t r = 0; r < rows; ++r) {
    const bool valid = chunk && r < chunk->rows && (chunk->valid.empty() || chunk->valid[r] != 0);
    metas[r].valid = valid;
    metas[r].position = valid ? chunk->positions[r] : 0;
    if (config.vocab > 0) words[r] = valid ? chunk->tokens[r] : config.vocab;  // out of range: a zero row
    else if (valid) std::copy_n(chunk->embeddings.data() + uint64_t{r} * H, H, floats + uint64_t{r} * H);
    else std::fill_n(floats + uint64_t{r} * H, H, 0.0f);
  }
  return metas;
}

StackOutput Stack::Impl::run(const StackChunk* chunk, size_t first_block, BlockMode mode, const StackRequest& request) {
  require(!request.logits || config.vocab > 0, "logits requested from a stack without a vocabulary");
  finish_pending();  // the previous step is done: staging is free
  vk::CommandRecorder& rec = submission.begin();
  rec.attach(profiler.get());
  const uint32_t H = config.hidden;
  std::vector<QueryMeta> rows;
  if (first_block == 0 && mode != BlockMode::flush) {
    const uint32_t n = mode == BlockMode::decode ? 1 : config.chunk;
    rows = stage_input(chunk, n);
    if (config.vocab > 0) {
      embed.record(rec, {n, H, config.vocab, 0, RowRef::contiguous(1), RowRef::contiguous(H)});
    } else {
      rec.copy(shared.upload, upload_plan.input * 4, shared.x[0], 0, uint64_t{n} * H * 4);
    }
  }
  auto* upload_words = static_cast<uint32_t*>(shared.upload.mapped());
  for (size_t l = first_block; l < blocks.size(); ++l) {
    const BlockMode block_mode = mode == BlockMode::flush && l != first_block ? BlockMode::stream : mode;
    const BlockStep step = blocks[l]->plan(std::move(rows), block_mode);
    blocks[l]->stage(step, upload_words + upload_plan.blocks[l]);
    blocks[l]->record(rec, step, upload_plan.blocks[l]);
    rows = step.evicted;
  }

  StackOutput out;
  for (const QueryMeta& m : rows)
    if (m.valid) out.positions.push_back(m.position);
  const uint32_t count = static_cast<uint32_t>(rows.size());
  const bool read = !out.positions.empty() && (request.hidden || request.logits);
  if (!out.positions.empty() && (read || on_output)) {
    final_norm.record(rec, {count, H, config.final_norm_eps, 0, output_norm.bias_offset, RowRef::contiguous(H),
                            RowRef::contiguous(H)});
    if (on_output) on_output(rec, final_rows, rows);
  }
  if (read) {
    if (request.hidden) rec.copy(final_rows, 0, readback, readback_plan.hidden * 4, uint64_t{count} * H * 4);
    if (request.logits) {
      head.record(rec, count, RowRef::contiguous(H), RowRef::contiguous(config.vocab));
      shared.checks->record(rec, logits_site, 0, count * config.vocab);
      rec.copy(logits, 0, readback, readback_plan.logits * 4, uint64_t{count} * config.vocab * 4);
    }
  }
  recorded = {1, rec.counts().dispatches, rec.counts().barriers, rec.counts().copies};
  submission.submit();
  ++steps;
  unverified = true;
  if (!read) return out;
  finish_pending();
  const auto* floats = static_cast<const float*>(readback.mapped());
  for (uint32_t r = 0; r < count; ++r) {
    if (!rows[r].valid) continue;
    if (request.hidden)
      out.hidden.insert(out.hidden.end(), floats + readback_plan.hidden + uint64_t{r} * H,
                        floats + readback_plan.hidden + uint64_t{r + 1} * H);
    if (request.logits)
      out.logits.insert(out.logits.end(), floats + readback_plan.logits + uint64_t{r} * config.vocab,
                        floats + readback_plan.logits + uint64_t{r + 1} * config.vocab);
  }
  return out;
}

void Stack::Impl::load_encoder_memory(RowRef rows, const std::vector<int64_t>& positions) {
  finish_pending();
  vk::CommandRecorder& rec = submission.begin();
  auto* words = static_cast<uint32_t*>(shared.upload.mapped());
  for (size_t l = 0; l < blocks.size(); ++l)
    if (blocks[l]->cross()) blocks[l]->record_load(rec, rows, positions, words, upload_plan.blocks[l]);
  submission.submit();
  submission.wait();
}

Stack::Stack(Context& context, const StackConfig& config, WeightSource& weights)
    : impl_(std::make_unique<Impl>(context, config, weights, nullptr)) {}
Stack::Stack(Context& context, const StackConfig& config, WeightSource& weights, const vk::Buffer* encoder_rows)
    : impl_(std::make_unique<Impl>(context, config, weights, encoder_rows)) {}
Stack::~Stack() = default;

const StackConfig& Stack::config() const { return impl_->config; }

namespace {

void check_gpu_positions(const StackChunk& chunk) {
  for (uint32_t r = 0; r < chunk.rows; ++r) {
    if (!chunk.valid.empty() && chunk.valid[r] == 0) continue;
    require(chunk.positions[r] >= 0 && chunk.positions[r] <= std::numeric_limits<int32_t>::max(),
            "stack positions must lie in [0, 2^31), got " + std::to_string(chunk.positions[r]));
  }
}

}  // namespace

StackOutput Stack::step(const StackChunk& chunk, const StackRequest& request) {
  Impl& m = *impl_;
  require(!m.finished, "step() after finish(): use decode()");
  m.validator.check(chunk, m.config, m.config.chunk);
  check_gpu_positions(chunk);
  StackOutput out = m.run(&chunk, 0, BlockMode::stream, request);
  m.validator.accept(chunk);
  return out;
}

StackOutput Stack::drain_step(const StackRequest& request) {
  Impl& m = *impl_;
  return m.run(nullptr, 0, BlockMode::stream, request);
}

StackOutput Stack::flush_block(size_t block, const StackRequest& request) {
  Impl& m = *impl_;
  return m.run(nullptr, block, BlockMode::flush, request);
}

void Stack::mark_finished() { impl_->finished = true; }

StackOutput Stack::decode(const StackChunk& one, const StackRequest& request) {
  Impl& m = *impl_;
  require(m.finished, "decode() before finish(): drain the stack first");
  m.validator.check(one, m.config, 1);
  require(one.rows == 1, "decode() takes exactly one position");
  check_gpu_positions(one);
  StackOutput out = m.run(&one, 0, BlockMode::decode, request);
  m.validator.accept(one);
  return out;
}

bool Stack::has_pending() const {
  for (const auto& b : impl_->blocks)
    if (b->has_pending()) return true;
  return false;
}

MemorySnapshot Stack::snapshot(size_t block) {
  Impl& m = *impl_;
  require(block < m.blocks.size(), "no block " + std::to_string(block));
  m.finish_pending();
  return m.blocks[block]->kv().read_snapshot(m.submission, m.readback, 0);
}

StackMemory Stack::memory() const {
  const Impl& m = *impl_;
  StackMemory out;
  for (const auto& b : m.blocks) out.blocks.push_back(b->memory());
  out.model = m.output_norm.buffer.size() + m.embedding_table.device_bytes() + m.output.device_bytes();
  out.scratch = m.shared.scratch->device_bytes();
  out.activations = 0;
  for (const vk::Buffer* b : {&m.shared.x[0], &m.shared.x[1], &m.shared.h, &m.shared.y, &m.shared.gu, &m.final_rows, &m.logits})
    out.activations += b->size();
  out.staging = m.shared.upload.size() + m.readback.size();
  return out;
}

Stack::Recorded Stack::last_recorded() const { return impl_->recorded; }

void Stack::set_profiling(bool enabled) {
  impl_->finish_pending();
  impl_->profiler = enabled ? std::make_unique<vk::Profiler>(impl_->context, 4096) : nullptr;
}

std::vector<KernelTime> Stack::last_profile() {
  impl_->finish_pending();
  std::vector<KernelTime> out;
  if (impl_->profiler)
    for (const auto& s : impl_->profiler->read()) out.push_back({s.label, s.ns});
  return out;
}

}  // namespace attendre::gpu
