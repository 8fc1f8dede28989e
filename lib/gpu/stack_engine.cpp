#include "gpu/stack_engine.hpp"

#include "core/model_spec.hpp"
#include "core/try.hpp"

#include <attendre/error.hpp>
#include <attendre/gpu_stack.hpp>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <functional>
#include <limits>

namespace attendre::gpu {

using kernels::RowRef;

namespace {
double milliseconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}
}  // namespace

Result<std::unique_ptr<StackEngine>> StackEngine::create(Context& ctx, const StackConfig& c, WeightSource& weights,
                                                         const vk::Buffer* encoder_rows) {
  ATTENDRE_TRY(c.check());
  ATTENDRE_TRY_ASSIGN(const UploadPlan upload, UploadPlan::make(c));
  ATTENDRE_TRY_ASSIGN(const ReadbackPlan readback, ReadbackPlan::make(c));
  std::unique_ptr<StackEngine> engine(new StackEngine(ctx, c, upload, readback));
  ATTENDRE_TRY(engine->build(weights, encoder_rows));
  return engine;
}

Status StackEngine::build(WeightSource& weights, const vk::Buffer* encoder_rows) {
  shared_.encoder = encoder_rows;
  ATTENDRE_TRY_ASSIGN(const StackLayout layout, check_layout(weights));
  ATTENDRE_TRY_ASSIGN(const ModelSpec spec, model_spec(config_));
  ATTENDRE_TRY(make_buffers());
  ATTENDRE_TRY(load_weights(weights, spec, layout.memory));
  ATTENDRE_TRY(make_blocks());
  return make_head();
}

Result<StackLayout> StackEngine::check_layout(WeightSource& weights) {
  const DeviceCaps& caps = context_.caps();
  ATTENDRE_TRY_ASSIGN(shared_.ffn, FfnLayout::make(max_rows(config_), max_ffn(config_)));
  // Every buffer of the stack within the device's storage range and
  // allocation size before anything is allocated or a weight read: a
  // K/V memory or a logits buffer too large fails in a moment, naming
  // itself, not after gigabytes of weights were loaded.
  ATTENDRE_TRY_ASSIGN(StackLayout layout, plan_stack_layout(config_, caps, weights));
  ATTENDRE_TRY(layout.check(caps));
  return layout;
}

Status StackEngine::make_buffers() {
  Context& ctx = context_;
  const StackConfig& c = config_;
  const uint32_t rows = max_rows(c), H = c.hidden, F = max_ffn(c);
  auto device_buffer = [&](vk::Buffer& buffer, uint64_t bytes, const char* label) -> Status {
    ATTENDRE_TRY_ASSIGN(buffer, vk::Buffer::create(ctx, bytes, vk::MemoryIntent::device, label));
    return {};
  };
  for (vk::Buffer& x : shared_.x) ATTENDRE_TRY(device_buffer(x, uint64_t{rows} * H * 4, "block rows"));
  ATTENDRE_TRY(device_buffer(shared_.h, normed_words(c, rows, F) * 4, "normed rows"));
  ATTENDRE_TRY(device_buffer(shared_.y, uint64_t{rows} * H * 4, "attention block rows"));
  ATTENDRE_TRY(device_buffer(shared_.gu, shared_.ffn.words * 4, "ffn rows"));
  // Device-local: the slots' images (or an application's command buffer)
  // fill it, never the host, which must not flush over a step in flight.
  ATTENDRE_TRY(device_buffer(shared_.upload, upload_plan_.words * 4, "stack upload"));
  ATTENDRE_TRY_ASSIGN(const ScratchWords scratch, stack_scratch_words(c, ctx.caps()));
  ATTENDRE_TRY_ASSIGN(shared_.scratch, RetrievalScratch::create(ctx, scratch));
  ATTENDRE_TRY_ASSIGN(shared_.checks,
                      FiniteChecks::create(ctx, finite_sites(c), StepExecutor::kCheckSlots));
  ATTENDRE_TRY(device_buffer(final_rows_, uint64_t{rows} * H * 4, "final rows"));
  ATTENDRE_TRY(device_buffer(logits_, uint64_t{rows} * c.vocab * 4, "logits"));
  ATTENDRE_TRY_ASSIGN(executor_, StepExecutor::create(ctx, *shared_.checks, upload_plan_.words * 4, "stack upload slot",
                                                      readback_plan_.words * 4, "stack readback"));
  return {};
}

Status StackEngine::load_weights(WeightSource& weights, const ModelSpec& spec, const StackMemory& planned) {
  // The weights go into one arena sized by the plan (exact unless a device
  // asks for alignments past 256 bytes), through a staging ring freed when
  // they are in place.
  arena_ = std::make_unique<vk::MemoryArena>(context_, weight_bytes(planned), "weights");
  // Made after the members it fills: a failure below waits for its copies
  // in flight (its destructor) before they can be freed.
  WeightLoader loader(context_, weights, *arena_, config_.weights);
  ATTENDRE_TRY_ASSIGN(output_norm_, loader.norm(spec.output_norm, spec.output_norm_bias));
  if (spec.token_embd) {
    // Split by rows like the LM head when it exceeds one storage range.
    ATTENDRE_TRY_ASSIGN(embedding_table_, loader.matrix(*spec.token_embd));
  }
  if (spec.output) {
    ATTENDRE_TRY_ASSIGN(output_, loader.matrix(*spec.output));
  }
  std::vector<double> rope_factors;
  if (spec.rope_freqs) {
    ATTENDRE_TRY_ASSIGN(rope_factors, loader.values(spec.rope_freqs->name, {spec.rope_freqs->size}));
  }
  for (size_t l = 0; l < spec.blocks.size(); ++l) {
    ATTENDRE_TRY_ASSIGN(const BlockFusions fused,
                        DeviceBlock::fusions(context_.caps(), config_.activations, config_.blocks[l], spec.blocks[l],
                                             [&](const MatrixSpec& m) { return loader.stored_type_of(m); }));
    ATTENDRE_TRY_ASSIGN(BlockWeights w,
                        BlockWeights::load(loader, spec.blocks[l], config_.blocks[l], rope_factors, fused));
    block_weights_.push_back(std::move(w));
  }
  return loader.finish();
}

Status StackEngine::make_blocks() {
  for (size_t l = 0; l < config_.blocks.size(); ++l) {
    ATTENDRE_TRY_ASSIGN(std::unique_ptr<DeviceBlock> block,
                        DeviceBlock::create(context_, config_, l, block_weights_[l], shared_));
    blocks_.push_back(std::move(block));
  }
  return {};
}

Status StackEngine::make_head() {
  Context& ctx = context_;
  const StackConfig& c = config_;
  const kernels::KernelPlan plan = kernels::plan_kernels(ctx.caps());
  descriptors_ = std::make_unique<vk::DescriptorArena>(ctx);
  const vk::Buffer& last = shared_.x[c.blocks.size() % 2];  // the last block's output rows
  ATTENDRE_TRY_ASSIGN(final_norm_, kernels::Norm::create(ctx, *descriptors_, plan, c.final_norm, {&last},
                                                         {&output_norm_.buffer}, {&final_rows_}));
  ATTENDRE_TRY_ASSIGN(final_rows_site_, shared_.checks->add("the final rows", {&final_rows_}));
  if (c.vocab == 0) return {};
  for (const MatrixPart& part : embedding_table_.parts()) {
    ATTENDRE_TRY_ASSIGN(kernels::Embedding embed,
                        kernels::Embedding::create(ctx, *descriptors_, plan, embedding_table_.type(),
                                                   vk::BufferBinding{&shared_.upload, upload_plan_.input * 4,
                                                                     uint64_t{c.chunk} * 4},
                                                   vk::BufferBinding{&part.buffer}, vk::BufferBinding{&shared_.x[0]}));
    embed_.push_back(std::move(embed));
  }
  // fp16 activations: the LM head reads the final rows rounded into h
  // (free once the last block has run); hidden states stay fp32.
  const bool half = c.activations == MemoryStorage::f16;
  if (half) {
    ATTENDRE_TRY_ASSIGN(final_half_, kernels::StoreHalfRows::create(ctx, *descriptors_, plan, {&final_rows_}, {&shared_.h}));
  }
  const DeviceMatrix& head_matrix = c.tied_embeddings ? embedding_table_ : output_;
  ATTENDRE_TRY_ASSIGN(head_, Projection::create(ctx, *descriptors_, plan, head_matrix,
                                                half ? vk::BufferBinding{&shared_.h} : vk::BufferBinding{&final_rows_},
                                                {&logits_}, {}, c.activations));
  if (c.final_norm == NormKind::rms && kernels::folds_rms(plan, head_matrix.type(), c.activations)) {
    ATTENDRE_TRY_ASSIGN(head_rms_, Projection::create(ctx, *descriptors_, plan, head_matrix, {&last}, {&logits_}, {},
                                                      c.activations, std::nullopt,
                                                      kernels::RmsInput{{&output_norm_.buffer}, 0, c.final_norm_eps}));
  }
  ATTENDRE_TRY_ASSIGN(logits_site_, shared_.checks->add("the logits", {&logits_}));
  if (c.logit_soft_cap > 0.0) {
    ATTENDRE_TRY_ASSIGN(soft_cap_, kernels::SoftCap::create(ctx, *descriptors_, plan, {&logits_}));
  }
  return {};
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

Result<StackEngine::Planned> StackEngine::plan(const StackChunk* chunk, size_t first_block, BlockMode mode,
                                               uint32_t* words) {
  Planned p;
  std::vector<QueryMeta> rows;
  if (first_block == 0 && mode != BlockMode::flush) {
    p.input_rows = mode == BlockMode::decode ? 1 : config_.chunk;
    rows = stage_input(chunk, p.input_rows, words + upload_plan_.input);
  }
  for (size_t l = first_block; l < blocks_.size(); ++l) {
    const BlockMode block_mode = mode == BlockMode::flush && l != first_block ? BlockMode::stream : mode;
    ATTENDRE_TRY_ASSIGN(BlockStep step, blocks_[l]->plan(std::move(rows), block_mode));
    p.blocks.push_back(std::move(step));
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

Status StackEngine::record_step(vk::CommandRecorder& rec, const Planned& step, size_t first_block,
                                std::span<const Destination> hidden, Destination logits) {
  const uint32_t H = config_.hidden, n = step.input_rows;
  if (n > 0) {
    if (config_.vocab > 0) {
      // Part 0 writes zeros for the ids outside it, the later parts their own
      // rows over them: in order (parts() starts at id 0).
      for (size_t i = 0; i < embed_.size(); ++i) {
        const MatrixPart& part = embedding_table_.parts()[i];
        ATTENDRE_TRY(embed_[i].record(rec, {n, H, part.rows, 0, RowRef::contiguous(1), RowRef::contiguous(H),
                                            part.first_row, static_cast<float>(config_.embedding_scale)}));
      }
    } else {
      rec.copy(shared_.upload, upload_plan_.input * 4, shared_.x[0], 0, uint64_t{n} * H * 4);
    }
  }
  for (size_t i = 0; i < step.blocks.size(); ++i)
    ATTENDRE_TRY(blocks_[first_block + i]->record(rec, step.blocks[i], upload_plan_.blocks[first_block + i]));

  const std::vector<QueryMeta>& rows = step.emitted;
  const uint32_t count = static_cast<uint32_t>(rows.size());
  const bool emits = std::any_of(rows.begin(), rows.end(), [](const QueryMeta& m) { return m.valid; });
  const bool read = emits && (!hidden.empty() || logits.buffer);
  // Logits alone: the head normalizes the last block's rows itself.
  const bool head_normalizes = head_rms_ && hidden.empty() && !on_output;
  if (emits && (read || on_output) && !head_normalizes) {
    ATTENDRE_TRY(final_norm_.record(rec, {count, H, config_.final_norm_eps, 0, output_norm_.bias_offset,
                                          RowRef::contiguous(H), RowRef::contiguous(H)}));
    // Rows leaving as hidden states (or into an encoder output memory) are
    // checked: a final norm whose statistic left fp32 writes NaN rows
    // (norm.comp). Logits alone need no check of their own rows: a NaN
    // among a row's values makes every logit of the row NaN.
    if (!hidden.empty() || on_output) shared_.checks->record(rec, final_rows_site_, 0, count * H);
    if (on_output) on_output(rec, final_rows_, rows);
  }
  if (!read) return {};
  for (const Destination& d : hidden) copy_rows(rec, final_rows_, H, rows, d);
  if (logits.buffer) {
    RowRef head_rows = RowRef::contiguous(H);
    if (config_.activations == MemoryStorage::f16) {
      const uint32_t words = activation_row_words(H, MemoryStorage::f16);
      final_half_.record(rec, {count, H, 2 * words, 0, count});
      head_rows = RowRef::contiguous(words);
    }
    if (head_normalizes) {
      ATTENDRE_TRY(head_rms_->record(rec, count, RowRef::contiguous(H), RowRef::contiguous(config_.vocab)));
    } else {
      ATTENDRE_TRY(head_.record(rec, count, head_rows, RowRef::contiguous(config_.vocab)));
    }
    if (config_.logit_soft_cap > 0.0)
      ATTENDRE_TRY(soft_cap_.record(
          rec, {count, config_.vocab, static_cast<float>(config_.logit_soft_cap), RowRef::contiguous(config_.vocab)}));
    shared_.checks->record(rec, logits_site_, 0, count * config_.vocab);
    copy_rows(rec, logits_, config_.vocab, rows, logits);
  }
  return {};
}

Result<Ticket> StackEngine::submit_step(const StackChunk* chunk, size_t first_block, BlockMode mode,
                                        const StackRequest& request, const SubmitOptions& options) {
  ATTENDRE_TRY_ASSIGN(SubmitSlot* const began, executor_->begin());
  const auto host_start = std::chrono::steady_clock::now();  // after waiting for the slot's previous step
  SubmitSlot& slot = *began;
  vk::CommandRecorder& rec = slot.submission.recorder();
  ATTENDRE_TRY_ASSIGN(Planned step, plan(chunk, first_block, mode, static_cast<uint32_t*>(slot.upload.mapped())));
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
  ATTENDRE_TRY(record_step(rec, step, first_block, hidden, logits));
  ATTENDRE_TRY_ASSIGN(Ticket ticket, executor_->submit(slot, options.waits));
  recorded_ = {1, rec.counts().dispatches, rec.counts().barriers, rec.counts().copies, milliseconds_since(host_start)};
  reads_[slot.index] = {std::move(step.emitted), request};
  return ticket;
}

Result<StackOutput> StackEngine::collect(const Ticket& ticket) {
  ATTENDRE_TRY_ASSIGN(SubmitSlot* const collected, executor_->collect(ticket));
  SubmitSlot& slot = *collected;
  const StackRequest& request = reads_[slot.index].request;
  const std::vector<QueryMeta>& rows = reads_[slot.index].emitted;
  StackOutput out;
  for (const QueryMeta& m : rows)
    if (m.valid) out.positions.push_back(m.position);
  if (out.positions.empty() || !(request.hidden || request.logits)) return out;
  const auto wait_start = std::chrono::steady_clock::now();
  ATTENDRE_TRY(executor_->finish(slot));
  if (slot.step + 1 == executor_->steps()) recorded_.wait_ms = milliseconds_since(wait_start);  // the last submission
  const uint32_t H = config_.hidden, V = config_.vocab;
  const auto* floats = static_cast<const float*>(slot.readback.mapped());
  for (uint32_t r = 0; r < rows.size(); ++r) {
    if (!rows[r].valid) continue;
    if (request.hidden)
      out.hidden.insert(out.hidden.end(), floats + readback_plan_.hidden + uint64_t{r} * H,
                        floats + readback_plan_.hidden + uint64_t{r + 1} * H);
    if (request.logits)
      out.logits.insert(out.logits.end(), floats + readback_plan_.logits + uint64_t{r} * V,
                        floats + readback_plan_.logits + uint64_t{r + 1} * V);
  }
  return out;
}

Result<StackOutput> StackEngine::run(const StackChunk* chunk, size_t first_block, BlockMode mode,
                                     const StackRequest& request) {
  ATTENDRE_REQUIRE(!request.logits || config_.vocab > 0, "logits requested from a stack without a vocabulary");
  ATTENDRE_TRY(executor_->finish_all());  // blocking steps report an earlier step's non-finite values first
  ATTENDRE_TRY_ASSIGN(const Ticket ticket, submit_step(chunk, first_block, mode, request, {}));
  return collect(ticket);
}

Status StackEngine::load_encoder_memory(RowRef rows, const std::vector<int64_t>& positions) {
  ATTENDRE_TRY(executor_->finish_all());
  SubmitSlot& slot = executor_->slot(0);
  vk::Submission& submission = slot.submission;
  ATTENDRE_TRY_ASSIGN(vk::CommandRecorder* const began, submission.begin());
  vk::CommandRecorder& rec = *began;
  // The loads' metadata, written below, reaches the upload buffer first.
  rec.copy(slot.upload, 0, shared_.upload, 0, upload_plan_.words * 4);
  auto* words = static_cast<uint32_t*>(slot.upload.mapped());
  for (size_t l = 0; l < blocks_.size(); ++l)
    if (blocks_[l]->cross()) ATTENDRE_TRY(blocks_[l]->record_load(rec, rows, positions, words, upload_plan_.blocks[l]));
  ATTENDRE_TRY(submission.submit());
  return submission.wait();
}

Status check_gpu_positions(const StackChunk& chunk) {
  for (uint32_t r = 0; r < chunk.rows; ++r) {
    if (!chunk.valid.empty() && chunk.valid[r] == 0) continue;
    ATTENDRE_REQUIRE(chunk.positions[r] >= 0 && chunk.positions[r] <= std::numeric_limits<int32_t>::max(),
                     "stack positions must lie in [0, 2^31), got " + std::to_string(chunk.positions[r]));
  }
  return {};
}

Result<RecordedStep> StackEngine::record_step_into(VkCommandBuffer cb, const StackRecordInputs& in,
                                                   const StackRecordOutputs& out, size_t first_block, BlockMode mode) {
  ATTENDRE_REQUIRE(cb != VK_NULL_HANDLE, "record: no command buffer");
  const uint32_t H = config_.hidden;
  const bool ids = config_.vocab > 0, flush = mode == BlockMode::flush;
  // Room for the rows a step may emit: at most what it takes in, except a
  // flush, which empties a block's Q ring into the blocks after it.
  const uint32_t input_rows = mode == BlockMode::decode ? 1 : config_.chunk;
  const uint32_t room = flush ? max_rows(config_) : input_rows;
  ATTENDRE_REQUIRE(!(ids ? in.embeddings : in.tokens),
                   ids ? "record: a stack with a vocabulary takes token ids, not embeddings"
                       : "record: a stack without a vocabulary takes embeddings, not ids");
  ATTENDRE_REQUIRE(!out.logits || ids, "record: logits requested from a stack without a vocabulary");
  const std::optional<BufferRange>& device = ids ? in.tokens : in.embeddings;
  ATTENDRE_REQUIRE(!flush || (!device && in.chunk.rows == 0), "record_flush() takes no input rows");
  const uint32_t row_words = ids ? 1 : H;
  // The device input's values never reach the host: positions and valid
  // flags are checked with placeholders (id 0, zero rows) in its place,
  // which the upload image then holds until the device copies overwrite them.
  StackChunk chunk = in.chunk;
  std::vector<uint32_t> placeholder_ids;
  std::vector<float> placeholder_rows;
  if (device) {
    ATTENDRE_REQUIRE(ids ? chunk.tokens.empty() : chunk.embeddings.empty(),
                     "record: the input rows come from the chunk or from a buffer range, not both");
    ATTENDRE_TRY(gpu::check_range(*device, uint64_t{chunk.rows} * row_words * 4, ids ? "tokens" : "embeddings"));
    if (ids) chunk.tokens = placeholder_ids = std::vector<uint32_t>(chunk.rows, 0);
    else chunk.embeddings = placeholder_rows = std::vector<float>(uint64_t{chunk.rows} * H, 0.0f);
  }
  if (out.hidden) ATTENDRE_TRY(gpu::check_range(*out.hidden, uint64_t{room} * H * 4, "hidden"));
  if (out.logits) ATTENDRE_TRY(gpu::check_range(*out.logits, uint64_t{room} * config_.vocab * 4, "logits"));
  if (!flush) {
    ATTENDRE_TRY(validator_.check(chunk, config_, input_rows));
    ATTENDRE_TRY(check_gpu_positions(chunk));
  }

  // Committed from here. The upload image travels inside `cb`
  // (vkCmdUpdateBuffer into the upload buffer, after the acquire barrier):
  // the host writes no mapped memory that an earlier step may still read.
  std::vector<uint32_t> image(upload_plan_.words);
  ATTENDRE_TRY_ASSIGN(const Planned step, plan(flush ? nullptr : &chunk, first_block, mode, image.data()));
  vk::CommandRecorder rec = executor_->begin_recorded(cb);
  ATTENDRE_TRY(rec.update(shared_.upload, 0, image.size() * 4, image.data()));
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
  ATTENDRE_TRY(record_step(rec, step, first_block, hidden_to,
                           logits ? Destination{&*logits, out.logits->offset, true} : Destination{}));
  executor_->end_recorded(rec, out.consumer);
  if (!flush) validator_.accept(chunk);
  RecordedStep recorded;
  for (const QueryMeta& m : step.emitted)
    if (m.valid) recorded.emitted_positions.push_back(m.position);
  return recorded;
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
  out.staging += executor_->staging_bytes();
  out.load_staging = context_.caps().unified_memory ? 0 : WeightLoader::kStagingBytes;
  return out;
}


}  // namespace attendre::gpu
