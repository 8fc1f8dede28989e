// One ATTENDRE layer step on the device (spec section 3): the chunk is
// uploaded into the Q ring and the K/V chunk buffer, then insertion,
// retrieval with the evicted queries, attend and the policy update are
// recorded into one command buffer: the layer's own, submitted once
// (step, submit), or an application's (record).
#include "gpu/kv_recorder.hpp"
#include "gpu/layouts.hpp"
#include "gpu/query_ring.hpp"
#include "gpu/recorded_steps.hpp"
#include "gpu/staging.hpp"
#include "gpu/step_executor.hpp"
#include "vulkan/buffer.hpp"
#include "vulkan/commands.hpp"
#include "core/try.hpp"
#include "core/stream_validator.hpp"

#include <attendre/data_only_memory.hpp>
#include <attendre/error.hpp>
#include <attendre/gpu.hpp>

#include <algorithm>
#include <array>
#include <cstring>
#include <limits>

namespace attendre::gpu {
namespace {

// Host-visible staging for one chunk, laid out as the destinations expect.
struct UploadLayout {
  uint64_t queries = 0, chunk = 0, ring_meta = 0, words = 0;
  static Result<UploadLayout> make(const LayerConfig& config, const ChunkLayout& chunk_layout) {
    UploadLayout l;
    SectionCursor c;
    l.queries = c.take(uint64_t{config.chunk} * config.shape.q_row());
    l.chunk = c.take(chunk_layout.init);  // keys .. tags of the chunk buffer, in place
    l.ring_meta = c.take(3ull * config.chunk);  // positions, valid, tags
    l.words = c.words;
    ATTENDRE_TRY(c.status());
    return l;
  }
};

// What result() decodes of the step a submit slot holds.
struct StepRead {
  std::vector<QueryMeta> evicted;
  StepRequest request;
  bool read_outputs = false;
};

}  // namespace

struct Layer::Impl {
  Impl(Context& ctx, const LayerConfig& cfg)
      : context(ctx),
        config(cfg),
        outputs_words(align_words(uint64_t{cfg.max_queries_per_step(true)} * cfg.shape.q_row())) {}

  // Makes the memories, staging and slots in place (the K/V memory's
  // kernels bind the ring's buffer).
  Status build() {
    const LayerConfig& cfg = config;
    ATTENDRE_TRY_ASSIGN(ring, QueryRing::create(context, cfg.shape, cfg.q_capacity, cfg.chunk, 0, 1, cfg.kv.storage));
    ATTENDRE_TRY_ASSIGN(checks, FiniteChecks::create(context, 2, StepExecutor::kCheckSlots));
    ATTENDRE_TRY_ASSIGN(kv, KvRecorder::create(context, cfg, cfg.max_queries_per_step(true), cfg.chunk, ring->buffer(),
                                             ring->layout(), *checks, ""));
    ATTENDRE_TRY_ASSIGN(upload_layout, UploadLayout::make(cfg, kv->chunk_layout()));
    ATTENDRE_TRY_ASSIGN(staged, vk::Buffer::create(context, upload_layout.words * 4, vk::MemoryIntent::device,
                                                   "recorded chunk"));
    const uint64_t readback_bytes = (outputs_words + align_words(kv->snapshot_words()) + kv->evicted_words()) * 4;
    ATTENDRE_TRY_ASSIGN(executor, StepExecutor::create(context, *checks, upload_layout.words * 4, "chunk upload",
                                                       readback_bytes, "readback"));
    return {};
  }

  // Records the step into the next slot's command buffer and submits it.
  Result<Ticket> submit(std::vector<QueryMeta> evicted, const ChunkView* chunk, const std::vector<QueryMeta>* inserted,
                        uint64_t first, const StepRequest& request, const SubmitOptions& options);
  // Fails before anything changed when the options do not fit the layer.
  Status check(const SubmitOptions& options) const;
  Result<StepResult> result(const Ticket& ticket);
  // The chunk as the upload layout holds it, and the copies from such an
  // image in `src` into the Q ring and the K/V chunk buffer.
  void pack_chunk(const ChunkView& chunk, const std::vector<QueryMeta>& inserted, uint32_t* words) const;
  void record_chunk(vk::CommandRecorder& rec, const vk::Buffer& src, uint64_t first) const;
  // Records the chunk's insertion and the evicted queries' retrieval.
  Status record_memories(vk::CommandRecorder& rec, const std::vector<QueryMeta>* inserted, uint64_t first,
                         const QueryRange& range);
  // Copies the valid evicted queries' outputs, packed, to the application's range.
  void record_outputs(vk::CommandRecorder& rec, const std::vector<QueryMeta>& evicted, const BufferRange& outputs) const;

  Context& context;
  LayerConfig config;
  uint64_t outputs_words;
  std::unique_ptr<QueryRing> ring;
  std::unique_ptr<FiniteChecks> checks;
  std::unique_ptr<KvRecorder> kv;
  UploadLayout upload_layout;
  std::unique_ptr<StepExecutor> executor;
  std::array<StepRead, StepExecutor::kSlots> reads;  // per submit slot
  // record()'s chunk image: device-local, written by the command buffer
  // itself, so nothing the host owns must outlive the application's submission.
  vk::Buffer staged;
  StreamValidator validator;
};

Result<std::unique_ptr<Layer>> Layer::create(Context& context, const LayerConfig& config) {
  ATTENDRE_TRY(config.check());
  auto impl = std::make_unique<Impl>(context, config);
  ATTENDRE_TRY(impl->build());
  return std::unique_ptr<Layer>(new Layer(std::move(impl)));
}
Layer::Layer(std::unique_ptr<Impl>&& impl) : impl_(std::move(impl)) {}
Layer::~Layer() = default;

const LayerConfig& Layer::config() const { return impl_->config; }
uint64_t Layer::device_bytes() const {
  return impl_->ring->buffer().size() + impl_->kv->device_bytes() + impl_->staged.size() +
         impl_->executor->staging_bytes();
}
uint32_t Layer::queries_per_batch() const { return impl_->kv->queries_per_batch(); }
Status Layer::wait() { return impl_->executor->finish_all(); }
Status Layer::set_profiling(bool enabled) { return impl_->executor->set_profiling(enabled); }
Result<std::vector<KernelTime>> Layer::last_profile() { return impl_->executor->last_profile(); }

bool Layer::has_pending_queries() const { return impl_->ring->has_pending(); }

Status Layer::Impl::check(const SubmitOptions& options) const {
  ATTENDRE_TRY(executor->check_waits(options.waits));
  if (options.outputs) return check_range(*options.outputs, uint64_t{config.chunk} * config.shape.q_row() * 4, "outputs");
  return {};
}

Result<Ticket> Layer::submit(const ChunkView& chunk, const StepRequest& request, const SubmitOptions& options) {
  Impl& m = *impl_;
  ATTENDRE_TRY(m.check(options));
  ATTENDRE_REQUIRE(!request.evicted || m.config.kv.copy_out_evicted,
                   "evicted entries requested but copy_out_evicted is off");
  // A snapshot and evicted entries are decoded with the memory's host
  // counts, which the next step changes.
  const SubmitSlot& previous = m.executor->previous_slot();
  const StepRequest& asked = m.reads[previous.index].request;
  ATTENDRE_REQUIRE(!(previous.uncollected && (asked.snapshot || asked.evicted)),
                   "collect the result of a step that asked for a snapshot or evicted entries before submitting the next");
  ATTENDRE_TRY(m.validator.check(chunk, m.config));
  ATTENDRE_TRY(check_int32_positions(chunk));
  const std::vector<QueryMeta> rows = query_metas(chunk, m.config.chunk);
  const InsertionRows in = insertion_rows(rows, m.config.chunk);
  ATTENDRE_TRY(m.kv->plan_insert(in.valid, in.positions));  // fails before anything changed
  ATTENDRE_TRY(m.executor->ready());  // an earlier step's failure, too
  const uint64_t first = m.ring->next_sequence();
  std::vector<QueryMeta> evicted = m.ring->insert(rows);
  ATTENDRE_TRY_ASSIGN(Ticket ticket, m.submit(std::move(evicted), &chunk, &rows, first, request, options));
  m.validator.accept(chunk, m.config);
  return ticket;
}

Result<StepResult> Layer::result(const Ticket& ticket) { return impl_->result(ticket); }

Result<StepResult> Layer::step(const ChunkView& chunk, const StepRequest& request) {
  ATTENDRE_TRY_ASSIGN(const Ticket ticket, submit(chunk, request));
  return result(ticket);
}

Result<StepResult> Layer::drain_step(const StepRequest& request) { return step(ChunkView{}, request); }

Result<StepResult> Layer::flush(const StepRequest& request) {
  ATTENDRE_REQUIRE(!request.evicted, "a flush step inserts nothing, so it evicts nothing");
  ATTENDRE_TRY(impl_->executor->ready());  // before the ring gives its queries up
  ATTENDRE_TRY_ASSIGN(const Ticket ticket, impl_->submit(impl_->ring->take_all(), nullptr, nullptr, 0, request, {}));
  return result(ticket);
}

Result<MemorySnapshot> Layer::snapshot() {
  ATTENDRE_TRY(impl_->executor->finish_all());
  SubmitSlot& slot = impl_->executor->slot(0);
  return impl_->kv->read_snapshot(slot.submission, slot.readback, impl_->outputs_words);
}

void Layer::Impl::pack_chunk(const ChunkView& chunk, const std::vector<QueryMeta>& inserted, uint32_t* words) const {
  pack_query_rows(chunk, config.shape.q_row(), config.chunk, reinterpret_cast<float*>(words + upload_layout.queries));
  pack_kv_rows(chunk, kv->chunk_layout(), words + upload_layout.chunk);
  QueryRing::pack_meta(inserted, words + upload_layout.ring_meta);
}

void Layer::Impl::record_chunk(vk::CommandRecorder& rec, const vk::Buffer& src, uint64_t first) const {
  const uint32_t S = config.chunk;
  rec.copy(src, upload_layout.chunk * 4, kv->chunk_buffer(), 0, uint64_t{kv->chunk_layout().init} * 4);
  ring->record_query_rows(rec, src, upload_layout.queries, first, 0, S);
  ring->record_meta(rec, src, upload_layout.ring_meta, first, S);
}

Status Layer::Impl::record_memories(vk::CommandRecorder& rec, const std::vector<QueryMeta>* inserted, uint64_t first,
                                    const QueryRange& range) {
  if (inserted) {
    ring->record_store_queries(rec, first, config.chunk);
    const InsertionRows in = insertion_rows(*inserted, config.chunk);
    ATTENDRE_TRY(kv->record_insert(rec, in.valid, in.positions));
  }
  return kv->record_retrieve(rec, range);
}

Result<Ticket> Layer::Impl::submit(std::vector<QueryMeta> evicted, const ChunkView* chunk,
                                   const std::vector<QueryMeta>* inserted, uint64_t first, const StepRequest& request,
                                   const SubmitOptions& options) {
  const QueryRange range = ring->range_of(evicted);
  ATTENDRE_TRY_ASSIGN(SubmitSlot* const began, executor->begin());
  SubmitSlot& slot = *began;
  vk::CommandRecorder& rec = slot.submission.recorder();
  if (chunk) {
    pack_chunk(*chunk, *inserted, static_cast<uint32_t*>(slot.upload.mapped()));
    record_chunk(rec, slot.upload, first);
  }
  ATTENDRE_TRY(record_memories(rec, chunk ? inserted : nullptr, first, range));
  const bool read_outputs = request.outputs && range.last_valid != kernels::kInvalid;
  if (read_outputs)
    rec.copy(kv->attention_buffer(), kv->outputs_offset() * 4, slot.readback, 0,
             uint64_t{range.count} * config.shape.q_row() * 4);
  if (request.snapshot) kv->record_snapshot(rec, slot.readback, outputs_words * 4);
  const uint64_t evicted_at = outputs_words + align_words(kv->snapshot_words());
  if (request.evicted) ATTENDRE_TRY(kv->record_evicted(rec, slot.readback, evicted_at * 4));
  if (options.outputs) record_outputs(rec, evicted, *options.outputs);
  ATTENDRE_TRY_ASSIGN(Ticket ticket, executor->submit(slot, options.waits));
  reads[slot.index] = {std::move(evicted), request, read_outputs};
  return ticket;
}

void Layer::Impl::record_outputs(vk::CommandRecorder& rec, const std::vector<QueryMeta>& evicted,
                                 const BufferRange& outputs) const {
  const uint64_t row_bytes = uint64_t{config.shape.q_row()} * 4;
  copy_valid_rows_packed(rec, kv->attention_buffer(), kv->outputs_offset() * 4, row_bytes, evicted,
                         borrow(outputs, "application outputs"), outputs.offset);
}

Result<StepResult> Layer::Impl::result(const Ticket& ticket) {
  ATTENDRE_TRY_ASSIGN(SubmitSlot* const collected, executor->collect(ticket));
  SubmitSlot& slot = *collected;
  const StepRead& read = reads[slot.index];
  StepResult result;
  for (const QueryMeta& meta : read.evicted)
    if (meta.valid) result.emitted_positions.push_back(meta.position);
  if (!read.read_outputs && !read.request.snapshot && !read.request.evicted) return result;
  ATTENDRE_TRY(executor->finish(slot));
  const auto* words = static_cast<const uint32_t*>(slot.readback.mapped());
  if (read.read_outputs) append_valid_rows(reinterpret_cast<const float*>(words), read.evicted, config.shape.q_row(), result.outputs);
  if (read.request.snapshot) result.snapshot = kv->decode_snapshot(words + outputs_words);
  if (read.request.evicted) result.evicted = kv->decode_evicted(words + outputs_words + align_words(kv->snapshot_words()));
  return result;
}

Result<RecordedStep> Layer::record(VkCommandBuffer cb, const LayerInputs& in, const LayerOutputs& out) {
  Impl& m = *impl_;
  ATTENDRE_REQUIRE(cb != VK_NULL_HANDLE, "record: no command buffer");
  const bool device = in.q || in.k || in.v;
  ATTENDRE_REQUIRE(!device || (in.q && in.k && in.v),
                   "record: q, k and v come all from the chunk or all from buffer ranges");
  const ChunkView& chunk = in.chunk;
  const auto parts = device ? StreamValidator::Parts::positions : StreamValidator::Parts::all;
  ATTENDRE_TRY(m.validator.check(chunk, m.config, parts));
  ATTENDRE_TRY(check_int32_positions(chunk));
  const uint32_t S = m.config.chunk, q_row = m.config.shape.q_row(), kv_row = m.config.shape.kv_row();
  if (device) {
    ATTENDRE_TRY(check_range(*in.q, uint64_t{chunk.rows} * q_row * 4, "q"));
    ATTENDRE_TRY(check_range(*in.k, uint64_t{chunk.rows} * kv_row * 4, "k"));
    ATTENDRE_TRY(check_range(*in.v, uint64_t{chunk.rows} * kv_row * 4, "v"));
  }
  if (out.outputs) ATTENDRE_TRY(check_range(*out.outputs, uint64_t{S} * q_row * 4, "outputs"));
  const std::vector<QueryMeta> rows = query_metas(chunk, S);
  const InsertionRows insertion = insertion_rows(rows, S);
  ATTENDRE_TRY(m.kv->plan_insert(insertion.valid, insertion.positions));  // fails before anything changed
  // Steps the layer submitted itself may still run: they come earlier on the
  // same queue, and the acquire barrier below orders them before this one.
  const uint64_t first = m.ring->next_sequence();
  const std::vector<QueryMeta> evicted = m.ring->insert(rows);
  const QueryRange range = m.ring->range_of(evicted);

  vk::CommandRecorder rec = m.executor->begin_recorded(cb);
  // The chunk image travels in the command buffer; device inputs then
  // overwrite its zeros row run by row (the tracker orders the overwrite).
  std::vector<uint32_t> image(m.upload_layout.words);
  std::vector<float> zeros;
  m.pack_chunk(without_device_rows(chunk, device, q_row, kv_row, zeros), rows, image.data());
  ATTENDRE_TRY(rec.update(m.staged, 0, image.size() * 4, image.data()));
  m.record_chunk(rec, m.staged, first);
  if (device) {
    record_queries_from(rec, *m.ring, *in.q, rows, first);
    record_keys_values_from(rec, *m.kv, *in.k, *in.v, rows);
  }
  ATTENDRE_TRY(m.record_memories(rec, &rows, first, range));
  RecordedStep recorded;
  if (out.outputs) m.record_outputs(rec, evicted, *out.outputs);
  m.executor->end_recorded(rec, out.consumer);
  m.validator.accept(chunk, m.config, parts);
  for (const QueryMeta& meta : evicted)
    if (meta.valid) recorded.emitted_positions.push_back(meta.position);
  return recorded;
}

}  // namespace attendre::gpu
