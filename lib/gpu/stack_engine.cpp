#include "gpu/stack_engine.hpp"

#include "core/model_spec.hpp"
#include "core/fail.hpp"
#include "vulkan/context_state.hpp"

#include <attendre/error.hpp>
#include <attendre/gpu_stack.hpp>

#include <algorithm>
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

namespace {

// The layout, with each matrix in the encoding `types` gives it: every
// buffer the engine creates, in the order it creates them, and the totals
// summed from them.
StackLayout plan(const StackConfig& config, const DeviceCaps& caps,
                 const std::function<ElementType(const MatrixSpec&)>& types) {
  const ModelSpec spec = model_spec(config).value_or_throw();
  StackLayout layout;
  StackMemory& m = layout.memory;
  auto add = [&](uint64_t& total, const std::string& name, uint64_t bytes, bool weights) {
    layout.buffers.push_back({name, bytes, weights});
    total += bytes;
  };
  // Weights in the loader's order (StackEngine's constructor): the final
  // norm, the embedding table and LM head (split by rows), then the blocks.
  add(m.model, spec.output_norm.name, DeviceNorm::placed_bytes(config.hidden, spec.output_norm_bias.has_value()), true);
  for (const auto& matrix : {spec.token_embd, spec.output}) {
    if (!matrix) continue;
    const std::vector<uint64_t> parts = DeviceMatrix::placed_parts(caps, types(*matrix), matrix->rows, matrix->cols, false);
    for (size_t i = 0; i < parts.size(); ++i)
      add(m.model, matrix->name + (parts.size() > 1 ? " part " + std::to_string(i) : ""), parts[i], true);
  }
  for (size_t l = 0; l < config.blocks.size(); ++l)
    m.blocks.push_back(DeviceBlock::plan_memory(config, l, caps, types, &layout.buffers));
  std::vector<uint64_t> placements;
  for (const PlannedBuffer& b : layout.buffers)
    if (b.weights) placements.push_back(b.bytes);
  layout.weight_allocations = vk::MemoryArena::plan_blocks(placements, caps.max_allocation);

  const ScratchWords s = scratch_words(config, caps);
  add(m.scratch, "retrieval logits", vk::rounded_bytes(s.logits * 4), false);
  add(m.scratch, "retrieval lists", vk::rounded_bytes(s.lists * 4), false);
  add(m.scratch, "retrieval attention", vk::rounded_bytes(s.attention * 4), false);
  add(m.scratch, "retrieval usage", vk::rounded_bytes(s.usage * 4), false);
  const uint64_t rows = max_rows(config), row_bytes = vk::rounded_bytes(rows * config.hidden * 4);
  for (const char* name : {"block rows 0", "block rows 1", "normed rows", "attention block rows"})
    add(m.activations, name, row_bytes, false);
  add(m.activations, "ffn rows", vk::rounded_bytes(FfnLayout::make(static_cast<uint32_t>(rows), max_ffn(config)).words * 4),
      false);
  add(m.activations, "final rows", row_bytes, false);
  add(m.activations, "logits", vk::rounded_bytes(rows * config.vocab * 4), false);
  add(m.staging, "stack upload", vk::rounded_bytes(UploadPlan(config).words * 4), false);
  for (const char* slot : {"0", "1"}) {  // double-buffered submissions
    add(m.staging, std::string("stack upload slot ") + slot, vk::rounded_bytes(UploadPlan(config).words * 4), false);
    add(m.staging, std::string("stack readback ") + slot, vk::rounded_bytes(ReadbackPlan(config).words * 4), false);
  }
  for (uint32_t slot = 0; slot <= StackEngine::kRecordedChecks; ++slot)  // flags per step in flight
    add(m.staging, "finite checks " + std::to_string(slot),
        vk::rounded_bytes(uint64_t{DeviceBlock::kFiniteSites * config.blocks.size() + 1} * kSectionWords * 4), false);
  m.load_staging = caps.unified_memory ? 0 : WeightLoader::kStagingBytes;
  return layout;
}

std::function<ElementType(const MatrixSpec&)> stored_types(const StackConfig& config, WeightSource* weights) {
  if (!weights) {
    const ElementType stored = element_type(config.weights);
    return [stored](const MatrixSpec&) { return stored; };
  }
  return [&config, weights](const MatrixSpec& m) {
    const uint64_t shape[] = {m.rows, m.cols};
    const std::optional<ElementType> type = weights->type_of(m.name, shape);
    if (!type) fail(ErrorCode::invalid_argument, "the weights have no tensor '" + m.name + "'");
    return DeviceMatrix::stored_type(*type, config.weights);
  };
}

std::string mib(uint64_t bytes) { return std::to_string((bytes + (1u << 20) - 1) >> 20) + " MiB"; }

uint64_t weight_bytes(const StackMemory& m) {
  uint64_t total = m.model;
  for (const BlockMemory& b : m.blocks) total += b.weights;
  return total;
}

}  // namespace

StackLayout plan_stack_layout(const StackConfig& config, const DeviceCaps& caps) {
  config.validate();
  return plan(config, caps, stored_types(config, nullptr));
}

StackLayout plan_stack_layout(const StackConfig& config, const DeviceCaps& caps, WeightSource& weights) {
  config.validate();
  return plan(config, caps, stored_types(config, &weights));
}

StackMemory plan_stack_memory(const StackConfig& config, const DeviceCaps& caps) {
  return plan_stack_layout(config, caps).memory;
}

StackMemory plan_stack_memory(const StackConfig& config, const DeviceCaps& caps, WeightSource& weights) {
  return plan_stack_layout(config, caps, weights).memory;
}

void StackLayout::check(const DeviceCaps& caps) const {
  for (const PlannedBuffer& b : buffers) {
    if (b.bytes > caps.max_storage_range)
      fail(ErrorCode::unsupported, "'" + b.name + "' needs " + mib(b.bytes) + " in one buffer, over the device's " +
                                       "storage-buffer range of " + mib(caps.max_storage_range));
    if (b.bytes > caps.max_allocation)
      fail(ErrorCode::unsupported, "'" + b.name + "' needs " + mib(b.bytes) + " in one allocation, over the device's " +
                                       "maxMemoryAllocationSize of " + mib(caps.max_allocation));
  }
  // Every placement fits an allocation (above), so every block the arena opens does.
  for (uint64_t a : weight_allocations)
    require(a <= caps.max_allocation, "the weight arena planned a block past maxMemoryAllocationSize");
}

StackEngine::StackEngine(Context& ctx, const StackConfig& c, WeightSource& weights, const vk::Buffer* encoder_rows)
    : context_(ctx), config_((c.validate(), c)), upload_plan_(c), readback_plan_(c) {
  shared_.encoder = encoder_rows;
  const DeviceCaps& caps = ctx.caps();
  const uint32_t rows = max_rows(c), H = c.hidden, F = max_ffn(c);
  shared_.ffn = FfnLayout::make(rows, F);
  check_range(caps, shared_.ffn.words * 4, "the FFN rows");
  check_range(caps, uint64_t{rows} * c.vocab * 4, "the logits of one step");
  // The weights go first, into one arena sized by the plan (exact unless a
  // device asks for alignments past 256 bytes), through a staging ring
  // freed when they are in place.
  const ModelSpec spec = model_spec(c).value_or_throw();
  arena_ = std::make_unique<vk::MemoryArena>(ctx, weight_bytes(plan_stack_memory(c, caps, weights)), "weights");
  WeightLoader loader(ctx, weights, *arena_, c.weights);

  for (vk::Buffer& x : shared_.x) x = vk::Buffer(ctx, uint64_t{rows} * H * 4, vk::MemoryIntent::device, "block rows");
  shared_.h = vk::Buffer(ctx, uint64_t{rows} * H * 4, vk::MemoryIntent::device, "normed rows");
  shared_.y = vk::Buffer(ctx, uint64_t{rows} * H * 4, vk::MemoryIntent::device, "attention block rows");
  shared_.gu = vk::Buffer(ctx, shared_.ffn.words * 4, vk::MemoryIntent::device, "ffn rows");
  // Device-local: the slots' images (or an application's command buffer)
  // fill it, never the host, which must not flush over a step in flight.
  shared_.upload = vk::Buffer(ctx, upload_plan_.words * 4, vk::MemoryIntent::device, "stack upload");
  shared_.scratch = std::make_unique<RetrievalScratch>(ctx, scratch_words(c, caps));
  shared_.checks = std::make_unique<FiniteChecks>(ctx, DeviceBlock::kFiniteSites * c.blocks.size() + 1, kRecordedChecks + 1);
  final_rows_ = vk::Buffer(ctx, uint64_t{rows} * H * 4, vk::MemoryIntent::device, "final rows");
  logits_ = vk::Buffer(ctx, uint64_t{rows} * c.vocab * 4, vk::MemoryIntent::device, "logits");
  for (uint32_t i = 0; i < slots_.size(); ++i) slots_[i] = std::make_unique<Slot>(ctx, i, upload_plan_, readback_plan_);

  output_norm_ = loader.norm(spec.output_norm, spec.output_norm_bias);
  if (spec.token_embd) {
    // Split by rows like the LM head when it exceeds one storage range.
    embedding_table_ = loader.matrix(*spec.token_embd);
  }
  if (spec.output) output_ = loader.matrix(*spec.output);
  const std::vector<double> rope_factors =
      spec.rope_freqs ? loader.values(spec.rope_freqs->name, {spec.rope_freqs->size}) : std::vector<double>{};
  for (size_t l = 0; l < spec.blocks.size(); ++l)
    block_weights_.push_back(BlockWeights::load(loader, spec.blocks[l], c.blocks[l], rope_factors));
  loader.finish();
  for (size_t l = 0; l < c.blocks.size(); ++l)
    blocks_.push_back(std::make_unique<DeviceBlock>(ctx, config_, l, block_weights_[l], shared_));

  const kernels::KernelPlan plan = kernels::plan_kernels(caps);
  descriptors_ = std::make_unique<vk::DescriptorArena>(ctx);
  const vk::Buffer& last = shared_.x[c.blocks.size() % 2];  // the last block's output rows
  final_norm_ = kernels::Norm(ctx, *descriptors_, plan, c.final_norm, {&last}, {&output_norm_.buffer}, {&final_rows_});
  if (c.vocab > 0) {
    for (const MatrixPart& part : embedding_table_.parts())
      embed_.emplace_back(ctx, *descriptors_, plan, embedding_table_.type(),
                          vk::BufferBinding{&shared_.upload, upload_plan_.input * 4, uint64_t{c.chunk} * 4},
                          vk::BufferBinding{&part.buffer}, vk::BufferBinding{&shared_.x[0]});
    head_ = Projection(ctx, *descriptors_, plan, c.tied_embeddings ? embedding_table_ : output_, {&final_rows_},
                       {&logits_});
    logits_site_ = shared_.checks->add("the logits", {&logits_});
  }
}

void StackEngine::finish_slot(Slot& slot) {
  slot.submission.wait();
  if (!slot.unverified) return;
  slot.unverified = false;
  shared_.checks->verify("step " + std::to_string(slot.step), slot.index);
}

void StackEngine::finish_pending() {
  // In submission order, so that a non-finite value is reported for the first step that had one.
  Slot& older = *slots_[steps_ % 2];
  finish_slot(older);
  finish_slot(*slots_[(steps_ + 1) % 2]);
  recorded_steps_.wait(slots_[0]->submission, *shared_.checks, kRecordedChecks,
                       "a recorded step before step " + std::to_string(steps_));
}

std::vector<QueryMeta> StackEngine::stage_input(const StackChunk* chunk, uint32_t rows, uint32_t* words) {
  auto* floats = reinterpret_cast<float*>(words);
  const uint32_t H = config_.hidden;
  std::vector<QueryMeta> metas(rows);
  for (uint32_t r = 0; r < rows; ++r) {
    const bool valid = chunk && r < chunk->rows && (chunk->valid.empty() || chunk->valid[r] != 0);
    metas[r].valid = valid;
    metas[r].position = valid ? chunk->positions[r] : 0;
    if (config_.vocab > 0) words[r] = valid ? chunk->tokens[r] : config_.vocab;  // out of range: a zero row
    else if (valid) std::copy_n(chunk->embeddings.data() + uint64_t{r} * H, H, floats + uint64_t{r} * H);
    else std::fill_n(floats + uint64_t{r} * H, H, 0.0f);
  }
  return metas;
}

StackEngine::Planned StackEngine::plan(const StackChunk* chunk, size_t first_block, BlockMode mode, uint32_t* words) {
  Planned p;
  std::vector<QueryMeta> rows;
  if (first_block == 0 && mode != BlockMode::flush) {
    p.input_rows = mode == BlockMode::decode ? 1 : config_.chunk;
    rows = stage_input(chunk, p.input_rows, words + upload_plan_.input);
  }
  for (size_t l = first_block; l < blocks_.size(); ++l) {
    const BlockMode block_mode = mode == BlockMode::flush && l != first_block ? BlockMode::stream : mode;
    p.blocks.push_back(blocks_[l]->plan(std::move(rows), block_mode));
    blocks_[l]->stage(p.blocks.back(), words + upload_plan_.blocks[l]);
    rows = p.blocks.back().evicted;
  }
  p.emitted = std::move(rows);
  return p;
}

void StackEngine::copy_rows(vk::CommandRecorder& rec, const vk::Buffer& src, uint32_t row_floats,
                            const std::vector<QueryMeta>& rows, Destination dst) const {
  const uint64_t row_bytes = uint64_t{row_floats} * 4;
  if (!dst.packed) return rec.copy(src, 0, *dst.buffer, dst.offset, rows.size() * row_bytes);
  uint64_t written = 0;
  for_valid_runs(rows, [&](uint32_t begin, uint32_t end) {
    rec.copy(src, begin * row_bytes, *dst.buffer, dst.offset + written * row_bytes, (end - begin) * row_bytes);
    written += end - begin;
  });
}

void StackEngine::record_step(vk::CommandRecorder& rec, const Planned& step, size_t first_block,
                              std::span<const Destination> hidden, Destination logits) {
  const uint32_t H = config_.hidden, n = step.input_rows;
  if (n > 0) {
    if (config_.vocab > 0) {
      // Part 0 writes zeros for the ids outside it, the later parts their own
      // rows over them: in order (parts() starts at id 0).
      for (size_t i = 0; i < embed_.size(); ++i) {
        const MatrixPart& part = embedding_table_.parts()[i];
        embed_[i].record(rec, {n, H, part.rows, 0, RowRef::contiguous(1), RowRef::contiguous(H), part.first_row});
      }
    } else {
      rec.copy(shared_.upload, upload_plan_.input * 4, shared_.x[0], 0, uint64_t{n} * H * 4);
    }
  }
  for (size_t i = 0; i < step.blocks.size(); ++i)
    blocks_[first_block + i]->record(rec, step.blocks[i], upload_plan_.blocks[first_block + i]);

  const std::vector<QueryMeta>& rows = step.emitted;
  const uint32_t count = static_cast<uint32_t>(rows.size());
  const bool emits = std::any_of(rows.begin(), rows.end(), [](const QueryMeta& m) { return m.valid; });
  const bool read = emits && (!hidden.empty() || logits.buffer);
  if (emits && (read || on_output)) {
    final_norm_.record(rec, {count, H, config_.final_norm_eps, 0, output_norm_.bias_offset, RowRef::contiguous(H),
                            RowRef::contiguous(H)});
    if (on_output) on_output(rec, final_rows_, rows);
  }
  if (!read) return;
  for (const Destination& d : hidden) copy_rows(rec, final_rows_, H, rows, d);
  if (logits.buffer) {
    head_.record(rec, count, RowRef::contiguous(H), RowRef::contiguous(config_.vocab));
    shared_.checks->record(rec, logits_site_, 0, count * config_.vocab);
    copy_rows(rec, logits_, config_.vocab, rows, logits);
  }
}

Ticket StackEngine::submit_step(const StackChunk* chunk, size_t first_block, BlockMode mode,
                                const StackRequest& request, const SubmitOptions& options) {
  if (profiler_) finish_pending();  // profiles are per step: one in flight
  Slot& slot = *slots_[steps_ % 2];
  finish_slot(slot);  // its previous step is done: its upload and readback are free
  shared_.checks->use_slot(slot.index);
  vk::CommandRecorder& rec = slot.submission.begin();
  rec.attach(profiler_.get());
  Planned step = plan(chunk, first_block, mode, static_cast<uint32_t*>(slot.upload.mapped()));
  // The kernels bind the shared upload buffer: the slot's image goes there
  // first, after the previous step's reads (begin()'s barrier orders them).
  rec.copy(slot.upload, 0, shared_.upload, 0, upload_plan_.words * 4);
  std::vector<Destination> hidden;
  std::optional<vk::Buffer> app_hidden;
  if (request.hidden) hidden.push_back({&slot.readback, readback_plan_.hidden * 4});
  if (options.outputs) {
    app_hidden = borrow(*options.outputs, "application hidden");
    hidden.push_back({&*app_hidden, options.outputs->offset, true});
  }
  Destination logits;
  if (request.logits) logits = {&slot.readback, readback_plan_.logits * 4};
  record_step(rec, step, first_block, hidden, logits);
  recorded_ = {1, rec.counts().dispatches, rec.counts().barriers, rec.counts().copies};
  slot.submission.submit(options.waits);
  slot.step = steps_++;
  slot.unverified = true;
  slot.uncollected = true;
  slot.emitted = std::move(step.emitted);
  slot.request = request;
  return TicketAccess::make(slot.submission, slot.step);
}

StackOutput StackEngine::result(const Ticket& ticket) {
  Slot& slot = *slots_[ticket.step() % 2];
  TicketAccess::check_collectable(ticket, slot.submission, slot.step, slot.uncollected);
  slot.uncollected = false;
  const std::vector<QueryMeta>& rows = slot.emitted;
  StackOutput out;
  for (const QueryMeta& m : rows)
    if (m.valid) out.positions.push_back(m.position);
  if (out.positions.empty() || !(slot.request.hidden || slot.request.logits)) return out;
  finish_slot(slot);
  const uint32_t H = config_.hidden, V = config_.vocab;
  const auto* floats = static_cast<const float*>(slot.readback.mapped());
  for (uint32_t r = 0; r < rows.size(); ++r) {
    if (!rows[r].valid) continue;
    if (slot.request.hidden)
      out.hidden.insert(out.hidden.end(), floats + readback_plan_.hidden + uint64_t{r} * H,
                        floats + readback_plan_.hidden + uint64_t{r + 1} * H);
    if (slot.request.logits)
      out.logits.insert(out.logits.end(), floats + readback_plan_.logits + uint64_t{r} * V,
                        floats + readback_plan_.logits + uint64_t{r + 1} * V);
  }
  return out;
}

StackOutput StackEngine::run(const StackChunk* chunk, size_t first_block, BlockMode mode, const StackRequest& request) {
  require(!request.logits || config_.vocab > 0, "logits requested from a stack without a vocabulary");
  finish_pending();  // blocking steps report an earlier step's non-finite values first
  return result(submit_step(chunk, first_block, mode, request, {}));
}

void StackEngine::load_encoder_memory(RowRef rows, const std::vector<int64_t>& positions) {
  finish_pending();
  Slot& slot = *slots_[0];
  vk::Submission& submission = slot.submission;
  vk::CommandRecorder& rec = submission.begin();
  // The loads' metadata, written below, reaches the upload buffer first.
  rec.copy(slot.upload, 0, shared_.upload, 0, upload_plan_.words * 4);
  auto* words = static_cast<uint32_t*>(slot.upload.mapped());
  for (size_t l = 0; l < blocks_.size(); ++l)
    if (blocks_[l]->cross()) blocks_[l]->record_load(rec, rows, positions, words, upload_plan_.blocks[l]);
  submission.submit();
  submission.wait();
}

namespace {

void check_gpu_positions(const StackChunk& chunk) {
  for (uint32_t r = 0; r < chunk.rows; ++r) {
    if (!chunk.valid.empty() && chunk.valid[r] == 0) continue;
    require(chunk.positions[r] >= 0 && chunk.positions[r] <= std::numeric_limits<int32_t>::max(),
            "stack positions must lie in [0, 2^31), got " + std::to_string(chunk.positions[r]));
  }
}

}  // namespace

Result<StackOutput> StackEngine::try_step(const StackChunk& chunk, const StackRequest& request) {
  return capture([&] {
    finish_pending();  // blocking steps report an earlier step's non-finite values first
    return result(submit(chunk, request, {}));
  });
}

Ticket StackEngine::submit(const StackChunk& chunk, const StackRequest& request, const SubmitOptions& options) {
  require(!finished_, "step() after finish(): use decode()");
  require(!request.logits || config_.vocab > 0, "logits requested from a stack without a vocabulary");
  slots_[0]->submission.check_waits(options.waits);
  if (options.outputs) check_range(*options.outputs, uint64_t{config_.chunk} * config_.hidden * 4, "outputs");
  validator_.check(chunk, config_, config_.chunk).or_throw();
  check_gpu_positions(chunk);
  Ticket ticket = submit_step(&chunk, 0, BlockMode::stream, request, options);
  validator_.accept(chunk);
  return ticket;
}

Result<StackOutput> StackEngine::try_drain_step(const StackRequest& request) {
  return capture([&] { return run(nullptr, 0, BlockMode::stream, request); });
}

Result<StackOutput> StackEngine::try_flush_block(size_t block, const StackRequest& request) {
  return capture([&] { return run(nullptr, block, BlockMode::flush, request); });
}

Result<StackOutput> StackEngine::try_decode(const StackChunk& one, const StackRequest& request) {
  return capture([&] {
    require(finished_, "decode() before finish(): drain the stack first");
    validator_.check(one, config_, 1).or_throw();
    require(one.rows == 1, "decode() takes exactly one position");
    check_gpu_positions(one);
    StackOutput out = run(&one, 0, BlockMode::decode, request);
    validator_.accept(one);
    return out;
  });
}

RecordedStep StackEngine::record(VkCommandBuffer cb, const StackRecordInputs& in, const StackRecordOutputs& out) {
  require(!finished_, "record() after finish(): the stack decodes now (record_decode)");
  return record_step_into(cb, in, out, 0, BlockMode::stream);
}

RecordedStep StackEngine::record_decode(VkCommandBuffer cb, const StackRecordInputs& in, const StackRecordOutputs& out) {
  require(finished_, "record_decode() before finish(): drain or flush the stack first");
  require(in.chunk.rows == 1, "record_decode() takes exactly one position");
  return record_step_into(cb, in, out, 0, BlockMode::decode);
}

RecordedStep StackEngine::record_flush(VkCommandBuffer cb, size_t block, const StackRecordOutputs& out) {
  require(!finished_, "record_flush() after finish(): the stack decodes now");
  require(block < blocks_.size(), "record_flush(): no block " + std::to_string(block));
  return record_step_into(cb, {}, out, block, BlockMode::flush);
}

RecordedStep StackEngine::record_step_into(VkCommandBuffer cb, const StackRecordInputs& in,
                                           const StackRecordOutputs& out, size_t first_block, BlockMode mode) {
  require(cb != VK_NULL_HANDLE, "record: no command buffer");
  const uint32_t H = config_.hidden;
  const bool ids = config_.vocab > 0, flush = mode == BlockMode::flush;
  // Room for the rows a step may emit: at most what it takes in, except a
  // flush, which empties a block's Q ring into the blocks after it.
  const uint32_t input_rows = mode == BlockMode::decode ? 1 : config_.chunk;
  const uint32_t room = flush ? max_rows(config_) : input_rows;
  require(!(ids ? in.embeddings : in.tokens), ids ? "record: a stack with a vocabulary takes token ids, not embeddings"
                                                  : "record: a stack without a vocabulary takes embeddings, not ids");
  require(!out.logits || ids, "record: logits requested from a stack without a vocabulary");
  const std::optional<BufferRange>& device = ids ? in.tokens : in.embeddings;
  require(!flush || (!device && in.chunk.rows == 0), "record_flush() takes no input rows");
  const uint32_t row_words = ids ? 1 : H;
  // The device input's values never reach the host: positions and valid
  // flags are checked with placeholders (id 0, zero rows) in its place,
  // which the upload image then holds until the device copies overwrite them.
  StackChunk chunk = in.chunk;
  std::vector<uint32_t> placeholder_ids;
  std::vector<float> placeholder_rows;
  if (device) {
    require(ids ? chunk.tokens.empty() : chunk.embeddings.empty(),
            "record: the input rows come from the chunk or from a buffer range, not both");
    check_range(*device, uint64_t{chunk.rows} * row_words * 4, ids ? "tokens" : "embeddings");
    if (ids) chunk.tokens = placeholder_ids = std::vector<uint32_t>(chunk.rows, 0);
    else chunk.embeddings = placeholder_rows = std::vector<float>(uint64_t{chunk.rows} * H, 0.0f);
  }
  if (out.hidden) check_range(*out.hidden, uint64_t{room} * H * 4, "hidden");
  if (out.logits) check_range(*out.logits, uint64_t{room} * config_.vocab * 4, "logits");
  if (!flush) {
    validator_.check(chunk, config_, input_rows).or_throw();
    check_gpu_positions(chunk);
  }

  // Committed from here. The upload image travels inside `cb`
  // (vkCmdUpdateBuffer into the upload buffer, after the acquire barrier):
  // the host writes no mapped memory that an earlier step may still read.
  std::vector<uint32_t> image(upload_plan_.words);
  const Planned step = plan(flush ? nullptr : &chunk, first_block, mode, image.data());
  shared_.checks->use_slot(kRecordedChecks);
  vk::CommandRecorder rec(cb, context_.state().debug_label);
  rec.acquire();
  rec.update(shared_.upload, 0, image.size() * 4, image.data());
  if (device) {
    const uint64_t row_bytes = uint64_t{row_words} * 4;
    copy_valid_rows(rec, borrow(*device, "application input"), device->offset, shared_.upload,
                    upload_plan_.input * 4, row_bytes, step.blocks[0].inserted);
  }
  std::optional<vk::Buffer> hidden, logits;
  std::vector<Destination> hidden_to;
  if (out.hidden) {
    hidden = borrow(*out.hidden, "application hidden");
    hidden_to.push_back({&*hidden, out.hidden->offset, true});
  }
  if (out.logits) logits = borrow(*out.logits, "application logits");
  record_step(rec, step, first_block, hidden_to,
              logits ? Destination{&*logits, out.logits->offset, true} : Destination{});
  rec.release(out.consumer.stages, out.consumer.access);
  recorded_steps_.add(rec);
  ++steps_;
  if (!flush) validator_.accept(chunk);
  RecordedStep recorded;
  for (const QueryMeta& m : step.emitted)
    if (m.valid) recorded.emitted_positions.push_back(m.position);
  return recorded;
}

bool StackEngine::has_pending() const {
  for (const auto& b : blocks_)
    if (b->has_pending()) return true;
  return false;
}

Result<MemorySnapshot> StackEngine::try_snapshot(size_t block) {
  return capture([&] {
    require(block < blocks_.size(), "no block " + std::to_string(block));
    finish_pending();
    // Slot 0's readback serves the snapshot: a result still to collect there would be overwritten.
    require(!(slots_[0]->uncollected && (slots_[0]->request.hidden || slots_[0]->request.logits)),
            "collect the submitted steps' results before a snapshot");
    return blocks_[block]->kv().read_snapshot(slots_[0]->submission, slots_[0]->readback, 0);
  });
}

StackMemory StackEngine::memory() const {
  StackMemory out;
  for (const auto& b : blocks_) out.blocks.push_back(b->memory());
  out.model = vk::MemoryArena::placed_bytes(output_norm_.buffer.size()) + embedding_table_.device_bytes() +
              output_.device_bytes();
  // What the weight arena holds past its placements (none when the plan was exact).
  out.model += arena_->reserved_bytes() - arena_->placed();
  out.scratch = shared_.scratch->device_bytes();
  out.activations = 0;
  for (const vk::Buffer* b : {&shared_.x[0], &shared_.x[1], &shared_.h, &shared_.y, &shared_.gu, &final_rows_, &logits_})
    out.activations += b->size();
  out.staging = shared_.upload.size() + shared_.checks->device_bytes();
  for (const auto& slot : slots_) out.staging += slot->upload.size() + slot->readback.size();
  out.load_staging = context_.caps().unified_memory ? 0 : WeightLoader::kStagingBytes;
  return out;
}

void StackEngine::set_profiling(bool enabled) {
  finish_pending();
  profiler_ = enabled ? std::make_unique<vk::Profiler>(context_, 4096) : nullptr;
}

std::vector<KernelTime> StackEngine::last_profile() {
  finish_pending();
  std::vector<KernelTime> out;
  if (profiler_)
    for (const auto& s : profiler_->read()) out.push_back({s.label, s.ns, s.pieces, s.longest_piece_ns});
  return out;
}

}  // namespace attendre::gpu
