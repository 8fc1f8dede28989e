// One ATTENDRE layer step on the device (spec section 3): the chunk is
// uploaded into the Q ring and the K/V chunk buffer, then insertion,
// retrieval with the evicted queries, attend and the policy update are
// recorded into one command buffer: the layer's own, submitted once
// (step, submit), or an application's (record).
#include "gpu/kv_memory.hpp"
#include "gpu/layouts.hpp"
#include "gpu/query_ring.hpp"
#include "gpu/recorded_steps.hpp"
#include "gpu/staging.hpp"
#include "gpu/ticket.hpp"
#include "vulkan/buffer.hpp"
#include "vulkan/commands.hpp"
#include "vulkan/context_state.hpp"
#include "core/fail.hpp"
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
  static UploadLayout make(const LayerConfig& config, const ChunkLayout& chunk_layout) {
    UploadLayout l;
    SectionCursor c;
    l.queries = c.take(uint64_t{config.chunk} * config.shape.q_row());
    l.chunk = c.take(chunk_layout.init);  // keys .. tags of the chunk buffer, in place
    l.ring_meta = c.take(3ull * config.chunk);  // positions, valid, tags
    l.words = c.words;
    return l;
  }
};

// One of two sets of what a submitted step uses from the host side, so that
// the host fills one while the device runs the step of the other.
struct StepSlot {
  StepSlot(Context& ctx, uint32_t slot_index, uint64_t upload_bytes, uint64_t readback_bytes)
      : index(slot_index),
        upload(ctx, upload_bytes, vk::MemoryIntent::upload, "chunk upload"),
        readback(ctx, readback_bytes, vk::MemoryIntent::readback, "readback"),
        submission(ctx) {}
  uint32_t index;  // in Layer::Impl::slots, and the finite checks' slot its steps set
  vk::Buffer upload, readback;
  vk::Submission submission;
  // The step submitted last from this slot, and what result() decodes of it.
  uint64_t step = 0;
  std::vector<QueryMeta> evicted;
  StepRequest request;
  bool read_outputs = false;
  bool uncollected = false;  // result() not called yet
  bool unverified = false;   // its finite checks are still to be read
};

}  // namespace

struct Layer::Impl {
  Impl(Context& ctx, const LayerConfig& cfg)
      : context(ctx),
        config((cfg.validate(), cfg)),
        ring(ctx, cfg.shape, cfg.q_capacity, cfg.chunk, 0, 1, cfg.kv.storage),
        checks(ctx, 2, kRecordedChecks + 1),
        kv(ctx, cfg, cfg.max_queries_per_step(true), cfg.chunk, ring.buffer(), ring.layout(), checks, ""),
        upload_layout(UploadLayout::make(cfg, kv.chunk_layout())),
        outputs_words(align_words(uint64_t{cfg.max_queries_per_step(true)} * cfg.shape.q_row())),
        staged(ctx, upload_layout.words * 4, vk::MemoryIntent::device, "recorded chunk") {
    const uint64_t readback_bytes = (outputs_words + align_words(kv.snapshot_words()) + kv.evicted_words()) * 4;
    for (uint32_t i = 0; i < slots.size(); ++i)
      slots[i] = std::make_unique<StepSlot>(ctx, i, upload_layout.words * 4, readback_bytes);
  }

  // Records the step into the next slot's command buffer and submits it.
  Ticket submit(std::vector<QueryMeta> evicted, const ChunkView* chunk, const std::vector<QueryMeta>* inserted,
                uint64_t first, const StepRequest& request, const SubmitOptions& options);
  // Throws before anything changed when the options do not fit the layer.
  void check(const SubmitOptions& options) const;
  StepResult result(const Ticket& ticket);
  // The chunk as the upload layout holds it, and the copies from such an
  // image in `src` into the Q ring and the K/V chunk buffer.
  void pack_chunk(const ChunkView& chunk, const std::vector<QueryMeta>& inserted, uint32_t* words) const;
  void record_chunk(vk::CommandRecorder& rec, const vk::Buffer& src, uint64_t first) const;
  // Copies the valid evicted queries' outputs, packed, to the application's range.
  void record_outputs(vk::CommandRecorder& rec, const std::vector<QueryMeta>& evicted, const BufferRange& outputs) const;
  // Waits for the slot's step and reports its non-finite values.
  void finish(StepSlot& slot);
  // Waits for every step, recorded ones included, and reports their non-finite values.
  void finish_pending();

  // The finite checks' slot of steps recorded into the application's
  // command buffers (slots 0 and 1 are the submitted steps').
  static constexpr uint32_t kRecordedChecks = 2;

  Context& context;
  LayerConfig config;
  QueryRing ring;
  FiniteChecks checks;
  KvMemory kv;
  UploadLayout upload_layout;
  uint64_t outputs_words;
  std::array<std::unique_ptr<StepSlot>, 2> slots;
  // record()'s chunk image: device-local, written by the command buffer
  // itself, so nothing the host owns must outlive the application's submission.
  vk::Buffer staged;
  StreamValidator validator;
  std::unique_ptr<vk::Profiler> profiler;
  uint64_t steps = 0;  // submitted or recorded so far
  RecordedSteps recorded;
};

void Layer::Impl::finish(StepSlot& slot) {
  slot.submission.wait();
  if (!slot.unverified) return;
  slot.unverified = false;
  checks.verify("step " + std::to_string(slot.step), slot.index);
}

void Layer::Impl::finish_pending() {
  for (auto& slot : slots) finish(*slot);
  recorded.wait(slots[0]->submission, checks, kRecordedChecks, "a recorded step before step " + std::to_string(steps));
}

Layer::Layer(Context& context, const LayerConfig& config) : impl_(std::make_unique<Impl>(context, config)) {}
Layer::~Layer() = default;

const LayerConfig& Layer::config() const { return impl_->config; }
uint64_t Layer::device_bytes() const {
  uint64_t bytes = impl_->ring.buffer().size() + impl_->kv.device_bytes() + impl_->staged.size();
  for (const auto& slot : impl_->slots) bytes += slot->upload.size() + slot->readback.size();
  return bytes;
}
uint32_t Layer::queries_per_batch() const { return impl_->kv.queries_per_batch(); }
void Layer::wait() { impl_->finish_pending(); }

void Layer::set_profiling(bool enabled) {
  impl_->finish_pending();
  impl_->profiler = enabled ? std::make_unique<vk::Profiler>(impl_->context, 512) : nullptr;
}

std::vector<KernelTime> Layer::last_profile() {
  impl_->finish_pending();
  std::vector<KernelTime> out;
  if (impl_->profiler)
    for (const auto& s : impl_->profiler->read()) out.push_back({s.label, s.ns, s.pieces, s.longest_piece_ns});
  return out;
}

bool Layer::has_pending_queries() const { return impl_->ring.has_pending(); }

void Layer::Impl::check(const SubmitOptions& options) const {
  slots[0]->submission.check_waits(options.waits);
  if (options.outputs) check_range(*options.outputs, uint64_t{config.chunk} * config.shape.q_row() * 4, "outputs");
}

Ticket Layer::submit(const ChunkView& chunk, const StepRequest& request, const SubmitOptions& options) {
  Impl& m = *impl_;
  m.check(options);
  require(!request.evicted || m.config.kv.copy_out_evicted, "evicted entries requested but copy_out_evicted is off");
  // A snapshot and evicted entries are decoded with the memory's host
  // counts, which the next step changes.
  const StepSlot& previous = *m.slots[(m.steps + 1) % 2];
  require(!(previous.uncollected && (previous.request.snapshot || previous.request.evicted)),
          "collect the result of a step that asked for a snapshot or evicted entries before submitting the next");
  m.validator.check(chunk, m.config).or_throw();
  check_int32_positions(chunk);
  const std::vector<QueryMeta> rows = query_metas(chunk, m.config.chunk);
  const InsertionRows in = insertion_rows(rows, m.config.chunk);
  m.kv.plan_insert(in.valid, in.positions);  // throws before anything changed
  const uint64_t first = m.ring.next_sequence();
  std::vector<QueryMeta> evicted = m.ring.insert(rows);
  Ticket ticket = m.submit(std::move(evicted), &chunk, &rows, first, request, options);
  m.validator.accept(chunk, m.config);
  return ticket;
}

StepResult Layer::result(const Ticket& ticket) { return impl_->result(ticket); }

StepResult Layer::step(const ChunkView& chunk, const StepRequest& request) { return result(submit(chunk, request)); }

StepResult Layer::drain_step(const StepRequest& request) { return step(ChunkView{}, request); }

StepResult Layer::flush(const StepRequest& request) {
  require(!request.evicted, "a flush step inserts nothing, so it evicts nothing");
  return result(impl_->submit(impl_->ring.take_all(), nullptr, nullptr, 0, request, {}));
}

MemorySnapshot Layer::snapshot() {
  impl_->finish_pending();
  return impl_->kv.read_snapshot(impl_->slots[0]->submission, impl_->slots[0]->readback, impl_->outputs_words);
}

void Layer::Impl::pack_chunk(const ChunkView& chunk, const std::vector<QueryMeta>& inserted, uint32_t* words) const {
  pack_query_rows(chunk, config.shape.q_row(), config.chunk, reinterpret_cast<float*>(words + upload_layout.queries));
  pack_kv_rows(chunk, kv.chunk_layout(), words + upload_layout.chunk);
  QueryRing::pack_meta(inserted, words + upload_layout.ring_meta);
}

void Layer::Impl::record_chunk(vk::CommandRecorder& rec, const vk::Buffer& src, uint64_t first) const {
  const uint32_t S = config.chunk;
  rec.copy(src, upload_layout.chunk * 4, kv.chunk_buffer(), 0, uint64_t{kv.chunk_layout().init} * 4);
  ring.record_query_rows(rec, src, upload_layout.queries, first, 0, S);
  ring.record_meta(rec, src, upload_layout.ring_meta, first, S);
}

Ticket Layer::Impl::submit(std::vector<QueryMeta> evicted, const ChunkView* chunk,
                           const std::vector<QueryMeta>* inserted, uint64_t first, const StepRequest& request,
                           const SubmitOptions& options) {
  const QueryRange range = ring.range_of(evicted);
  if (profiler) finish_pending();  // profiles are per step: one in flight
  StepSlot& slot = *slots[steps % 2];
  finish(slot);  // its previous step is done: its upload and readback are free
  checks.use_slot(slot.index);
  vk::CommandRecorder& rec = slot.submission.begin();
  rec.attach(profiler.get());
  if (chunk) {
    pack_chunk(*chunk, *inserted, static_cast<uint32_t*>(slot.upload.mapped()));
    record_chunk(rec, slot.upload, first);
    ring.record_store_queries(rec, first, config.chunk);
    const InsertionRows in = insertion_rows(*inserted, config.chunk);
    kv.record_insert(rec, in.valid, in.positions);
  }
  kv.record_retrieve(rec, range);
  slot.read_outputs = request.outputs && range.last_valid != kernels::kInvalid;
  if (slot.read_outputs)
    rec.copy(kv.attention_buffer(), kv.outputs_offset() * 4, slot.readback, 0,
             uint64_t{range.count} * config.shape.q_row() * 4);
  if (request.snapshot) kv.record_snapshot(rec, slot.readback, outputs_words * 4);
  const uint64_t evicted_at = outputs_words + align_words(kv.snapshot_words());
  if (request.evicted) kv.record_evicted(rec, slot.readback, evicted_at * 4);
  if (options.outputs) record_outputs(rec, evicted, *options.outputs);
  slot.submission.submit(options.waits);
  slot.step = steps++;
  slot.unverified = true;
  slot.uncollected = true;
  slot.evicted = std::move(evicted);
  slot.request = request;
  return TicketAccess::make(slot.submission, slot.step);
}

void Layer::Impl::record_outputs(vk::CommandRecorder& rec, const std::vector<QueryMeta>& evicted,
                                 const BufferRange& outputs) const {
  const uint64_t row_bytes = uint64_t{config.shape.q_row()} * 4;
  copy_valid_rows_packed(rec, kv.attention_buffer(), kv.outputs_offset() * 4, row_bytes, evicted,
                         borrow(outputs, "application outputs"), outputs.offset);
}

StepResult Layer::Impl::result(const Ticket& ticket) {
  StepSlot& slot = *slots[ticket.step() % 2];
  TicketAccess::check_collectable(ticket, slot.submission, slot.step, slot.uncollected);
  slot.uncollected = false;
  StepResult result;
  for (const QueryMeta& meta : slot.evicted)
    if (meta.valid) result.emitted_positions.push_back(meta.position);
  if (!slot.read_outputs && !slot.request.snapshot && !slot.request.evicted) return result;
  finish(slot);
  const auto* words = static_cast<const uint32_t*>(slot.readback.mapped());
  if (slot.read_outputs) append_valid_rows(reinterpret_cast<const float*>(words), slot.evicted, config.shape.q_row(), result.outputs);
  if (slot.request.snapshot) result.snapshot = kv.decode_snapshot(words + outputs_words);
  if (slot.request.evicted) result.evicted = kv.decode_evicted(words + outputs_words + align_words(kv.snapshot_words()));
  return result;
}

RecordedStep Layer::record(VkCommandBuffer cb, const LayerInputs& in, const LayerOutputs& out) {
  Impl& m = *impl_;
  require(cb != VK_NULL_HANDLE, "record: no command buffer");
  const bool device = in.q || in.k || in.v;
  require(!device || (in.q && in.k && in.v), "record: q, k and v come all from the chunk or all from buffer ranges");
  const ChunkView& chunk = in.chunk;
  const auto parts = device ? StreamValidator::Parts::positions : StreamValidator::Parts::all;
  m.validator.check(chunk, m.config, parts).or_throw();
  check_int32_positions(chunk);
  const uint32_t S = m.config.chunk, q_row = m.config.shape.q_row(), kv_row = m.config.shape.kv_row();
  if (device) {
    check_range(*in.q, uint64_t{chunk.rows} * q_row * 4, "q");
    check_range(*in.k, uint64_t{chunk.rows} * kv_row * 4, "k");
    check_range(*in.v, uint64_t{chunk.rows} * kv_row * 4, "v");
  }
  if (out.outputs) check_range(*out.outputs, uint64_t{S} * q_row * 4, "outputs");
  const std::vector<QueryMeta> rows = query_metas(chunk, S);
  const InsertionRows insertion = insertion_rows(rows, S);
  m.kv.plan_insert(insertion.valid, insertion.positions);  // throws before anything changed
  // Steps the layer submitted itself may still run: they come earlier on the
  // same queue, and the acquire barrier below orders them before this one.
  const uint64_t first = m.ring.next_sequence();
  const std::vector<QueryMeta> evicted = m.ring.insert(rows);
  const QueryRange range = m.ring.range_of(evicted);

  m.checks.use_slot(Impl::kRecordedChecks);
  vk::CommandRecorder rec(cb, m.context.state().debug_label);
  rec.acquire();
  // The chunk image travels in the command buffer; device inputs then
  // overwrite its zeros row run by row (the tracker orders the overwrite).
  std::vector<uint32_t> image(m.upload_layout.words);
  std::vector<float> zeros;
  m.pack_chunk(without_device_rows(chunk, device, q_row, kv_row, zeros), rows, image.data());
  rec.update(m.staged, 0, image.size() * 4, image.data());
  m.record_chunk(rec, m.staged, first);
  if (device) {
    record_queries_from(rec, m.ring, *in.q, rows, first);
    record_keys_values_from(rec, m.kv, *in.k, *in.v, rows);
  }
  m.ring.record_store_queries(rec, first, m.config.chunk);
  m.kv.record_insert(rec, insertion.valid, insertion.positions);
  m.kv.record_retrieve(rec, range);
  RecordedStep recorded;
  if (out.outputs) m.record_outputs(rec, evicted, *out.outputs);
  rec.release(out.consumer.stages, out.consumer.access);
  m.recorded.add(rec);
  ++m.steps;
  m.validator.accept(chunk, m.config, parts);
  for (const QueryMeta& meta : evicted)
    if (meta.valid) recorded.emitted_positions.push_back(meta.position);
  return recorded;
}

}  // namespace attendre::gpu
