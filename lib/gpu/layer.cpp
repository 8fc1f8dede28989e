// One ATTENDRE layer step on the device (spec section 3): the chunk is
// uploaded into the Q ring and the K/V chunk buffer, then insertion,
// retrieval with the evicted queries, attend and the policy update are
// recorded into one command buffer and submitted once.
#include "gpu/kv_memory.hpp"
#include "gpu/layouts.hpp"
#include "gpu/query_ring.hpp"
#include "gpu/staging.hpp"
#include "vulkan/buffer.hpp"
#include "vulkan/commands.hpp"
#include "core/fail.hpp"
#include "core/stream_validator.hpp"

#include <attendre/data_only_memory.hpp>
#include <attendre/error.hpp>
#include <attendre/gpu.hpp>

#include <algorithm>
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

}  // namespace

struct Layer::Impl {
  Impl(Context& ctx, const LayerConfig& cfg)
      : context(ctx),
        config((cfg.validate(), cfg)),
        ring(ctx, cfg.shape, cfg.q_capacity, cfg.chunk),
        checks(ctx, 2),
        kv(ctx, cfg, cfg.max_queries_per_step(true), cfg.chunk, ring.buffer(), ring.layout(), checks, ""),
        upload_layout(UploadLayout::make(cfg, kv.chunk_layout())),
        upload(ctx, upload_layout.words * 4, vk::MemoryIntent::upload, "chunk upload"),
        outputs_words(align_words(uint64_t{cfg.max_queries_per_step(true)} * cfg.shape.q_row())),
        readback(ctx, (outputs_words + align_words(kv.snapshot_words()) + kv.evicted_words()) * 4,
                 vk::MemoryIntent::readback, "readback"),
        submission(ctx) {}

  StepResult run(std::vector<QueryMeta> evicted, const ChunkView* chunk, const std::vector<QueryMeta>* inserted,
                 uint64_t first, const StepRequest& request);
  void stage_chunk(vk::CommandRecorder& rec, const ChunkView& chunk, const std::vector<QueryMeta>& inserted,
                   uint64_t first);
  // Waits for the last submitted step and reports its non-finite values.
  void finish_pending();

  Context& context;
  LayerConfig config;
  QueryRing ring;
  FiniteChecks checks;
  KvMemory kv;
  UploadLayout upload_layout;
  vk::Buffer upload;
  uint64_t outputs_words;
  vk::Buffer readback;
  vk::Submission submission;
  StreamValidator validator;
  std::unique_ptr<vk::Profiler> profiler;
  uint64_t steps = 0;         // submitted so far
  bool unverified = false;    // the last step's checks are still to be read
};

void Layer::Impl::finish_pending() {
  submission.wait();
  if (!unverified) return;
  unverified = false;
  checks.verify("step " + std::to_string(steps - 1));
}

Layer::Layer(Context& context, const LayerConfig& config) : impl_(std::make_unique<Impl>(context, config)) {}
Layer::~Layer() = default;

const LayerConfig& Layer::config() const { return impl_->config; }
uint64_t Layer::device_bytes() const {
  return impl_->ring.buffer().size() + impl_->kv.device_bytes() + impl_->upload.size() + impl_->readback.size();
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
    for (const auto& s : impl_->profiler->read()) out.push_back({s.label, s.ns});
  return out;
}

bool Layer::has_pending_queries() const { return impl_->ring.has_pending(); }

StepResult Layer::step(const ChunkView& chunk, const StepRequest& request) {
  Impl& m = *impl_;
  require(!request.evicted || m.config.kv.copy_out_evicted, "evicted entries requested but copy_out_evicted is off");
  m.validator.check(chunk, m.config);
  check_int32_positions(chunk);
  const std::vector<QueryMeta> rows = query_metas(chunk, m.config.chunk);
  const InsertionRows in = insertion_rows(rows, m.config.chunk);
  m.kv.plan_insert(in.valid, in.positions);  // throws before anything changed
  const uint64_t first = m.ring.next_sequence();
  std::vector<QueryMeta> evicted = m.ring.insert(rows);
  StepResult result = m.run(std::move(evicted), &chunk, &rows, first, request);
  m.validator.accept(chunk, m.config);
  return result;
}

StepResult Layer::drain_step(const StepRequest& request) { return step(ChunkView{}, request); }

StepResult Layer::flush(const StepRequest& request) {
  require(!request.evicted, "a flush step inserts nothing, so it evicts nothing");
  return impl_->run(impl_->ring.take_all(), nullptr, nullptr, 0, request);
}

MemorySnapshot Layer::snapshot() {
  impl_->finish_pending();
  return impl_->kv.read_snapshot(impl_->submission, impl_->readback, impl_->outputs_words);
}

void Layer::Impl::stage_chunk(vk::CommandRecorder& rec, const ChunkView& chunk, const std::vector<QueryMeta>& inserted,
                              uint64_t first) {
  const uint32_t S = config.chunk, q_row = config.shape.q_row();
  auto* words = static_cast<uint32_t*>(upload.mapped());
  pack_query_rows(chunk, q_row, S, reinterpret_cast<float*>(words + upload_layout.queries));
  pack_kv_rows(chunk, kv.chunk_layout(), words + upload_layout.chunk);
  QueryRing::pack_meta(inserted, words + upload_layout.ring_meta);
  rec.copy(upload, upload_layout.chunk * 4, kv.chunk_buffer(), 0, uint64_t{kv.chunk_layout().init} * 4);
  ring.record_rows(rec, upload, upload_layout.queries, ring.layout().queries, q_row, first, S);
  ring.record_meta(rec, upload, upload_layout.ring_meta, first, S);
}

StepResult Layer::Impl::run(std::vector<QueryMeta> evicted, const ChunkView* chunk,
                            const std::vector<QueryMeta>* inserted, uint64_t first, const StepRequest& request) {
  const QueryRange range = ring.range_of(evicted);

  finish_pending();  // the previous step is done: the upload buffer is free
  vk::CommandRecorder& rec = submission.begin();
  rec.attach(profiler.get());
  if (chunk) {
    stage_chunk(rec, *chunk, *inserted, first);
    const InsertionRows in = insertion_rows(*inserted, config.chunk);
    kv.record_insert(rec, in.valid, in.positions);
  }
  kv.record_retrieve(rec, range);
  const bool read_outputs = request.outputs && range.last_valid != kernels::kInvalid;
  if (read_outputs) rec.copy(kv.attention_buffer(), kv.outputs_offset() * 4, readback, 0, uint64_t{range.count} * config.shape.q_row() * 4);
  if (request.snapshot) kv.record_snapshot(rec, readback, outputs_words * 4);
  const uint64_t evicted_at = outputs_words + align_words(kv.snapshot_words());
  if (request.evicted) kv.record_evicted(rec, readback, evicted_at * 4);
  submission.submit();
  ++steps;
  unverified = true;

  StepResult result;
  for (const QueryMeta& meta : evicted)
    if (meta.valid) result.emitted_positions.push_back(meta.position);
  if (!read_outputs && !request.snapshot && !request.evicted) return result;
  finish_pending();
  const auto* words = static_cast<const uint32_t*>(readback.mapped());
  if (read_outputs) {
    append_valid_rows(reinterpret_cast<const float*>(words), evicted, config.shape.q_row(), result.outputs);
  }
  if (request.snapshot) result.snapshot = kv.decode_snapshot(words + outputs_words);
  if (request.evicted) result.evicted = kv.decode_evicted(words + evicted_at);
  return result;
}

}  // namespace attendre::gpu
