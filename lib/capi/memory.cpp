// Memory settings, the K/V memory alone and the ATTENDRE layer.
#include "capi/capi.hpp"

#include <attendre/memory_names.hpp>

#include <array>
#include <type_traits>

using namespace attendre;
using namespace attendre::capi;

namespace attendre::capi {

Result<MemorySetting> memory_setting(const attendre_memory_setting& s, std::optional<uint32_t> capacity) {
  MemorySetting setting;
  setting.q_capacity = s.q_capacity;
  setting.kv.capacity = capacity.value_or(s.kv_capacity);
  setting.kv.policy.lambda = s.lambda;
  // A policy or an alias (memory_names.hpp); an alias's sinks or window
  // apply where the struct leaves them 0.
  const auto given = [](uint32_t value) { return value ? std::optional<uint32_t>(value) : std::nullopt; };
  ATTENDRE_TRY(apply_memory_name(setting.kv, s.policy ? s.policy : "fifo", given(s.n_sink), given(s.n_recent)));
  setting.kv.protect_new = s.protect_new != 0;
  setting.kv.storage = s.fp16_memory ? MemoryStorage::f16 : MemoryStorage::f32;
  setting.top_k = s.top_k;
  setting.mode = s.shared_retrieval ? RetrievalMode::shared : RetrievalMode::per_head;
  setting.causal = s.causal != 0;
  return setting;
}

}  // namespace attendre::capi

namespace {

Result<LayerConfig> layer_config(const attendre_layer_config& c) {
  LayerConfig config;
  config.shape = {c.heads_q, c.heads_kv, c.head_dim};
  config.chunk = c.chunk;
  ATTENDRE_TRY_ASSIGN(const MemorySetting setting, memory_setting(c.memory));
  apply_memory(config, setting);
  config.retrieval.tag_mask = c.tag_mask != 0;
  if (c.scale != 0.0) config.retrieval.scale = c.scale;
  ATTENDRE_TRY(config.check());
  return config;
}

// The library's view of a C chunk of `rows` rows; the C layer checks the
// row count against the handle's limit first, so no array is read past it.
Result<ChunkView> chunk_view(const attendre_chunk* chunk, const char* chunk_name, const AttentionShape& shape,
                             uint32_t max_rows, const char* what) {
  ATTENDRE_C_NEED(chunk, std::string(what) + ": " + chunk_name);
  const attendre_chunk& c = *chunk;
  ATTENDRE_REQUIRE(c.rows <= max_rows, std::string(what) + ": " + std::to_string(c.rows) + " rows, at most " +
                                           std::to_string(max_rows) + " fit");
  const auto span_of = [&](const auto* p, size_t per_row) {
    return p ? std::span(p, size_t{c.rows} * per_row) : std::span<std::remove_pointer_t<decltype(p)>>();
  };
  ChunkView view;
  view.rows = c.rows;
  view.q = span_of(c.q, shape.q_row());
  view.k = span_of(c.k, shape.kv_row());
  view.v = span_of(c.v, shape.kv_row());
  view.positions = span_of(c.positions, 1);
  view.valid = span_of(c.valid, 1);
  view.tags = span_of(c.tags, 1);
  return view;
}

}  // namespace

namespace attendre::capi {

Outcome snapshot_out(const MemorySnapshot& held, int64_t* positions, double* scores, size_t* count,
                     const char* what) {
  ATTENDRE_C_TRY(room(positions, count, held.positions.size(), what));
  std::copy(held.positions.begin(), held.positions.end(), positions);
  if (scores) std::copy(held.scores.begin(), held.scores.end(), scores);
  *count = held.positions.size();
  return ATTENDRE_OK;
}

}  // namespace attendre::capi

extern "C" {

void attendre_memory_setting_defaults(attendre_memory_setting* setting) {
  if (!setting) return;
  *setting = attendre_memory_setting{};
  setting->chunk = MemoryPlan{}.chunk;
  setting->protect_new = 1;
  setting->causal = 1;
}

void attendre_layer_config_defaults(attendre_layer_config* config) {
  if (!config) return;
  *config = attendre_layer_config{};
  config->heads_q = config->heads_kv = config->head_dim = 1;
  config->chunk = 1;
  attendre_memory_setting_defaults(&config->memory);
}

attendre_status attendre_kv_memory_create(attendre_context* context, const attendre_layer_config* config,
                                          uint32_t max_queries, attendre_kv_memory** memory) {
  return guard([&]() -> Outcome {
    ATTENDRE_C_NEED(memory, "attendre_kv_memory_create: memory");
    *memory = nullptr;
    ATTENDRE_C_NEED(context, "attendre_kv_memory_create: context");
    Context& c = context->context;
    auto handle = std::make_unique<attendre_kv_memory>();
    ATTENDRE_C_NEED(config, "attendre_kv_memory_create: config");
    ATTENDRE_TRY_ASSIGN(handle->config, layer_config(*config));
    handle->max_queries = max_queries;
    ATTENDRE_TRY_ASSIGN(handle->memory, gpu::KeyValueMemory::create(c, handle->config.shape, handle->config.kv,
                                                                    handle->config.retrieval, handle->config.chunk,
                                                                    max_queries));
    *memory = handle.release();
    return ATTENDRE_OK;
  });
}

void attendre_kv_memory_destroy(attendre_kv_memory* memory) { delete memory; }

attendre_status attendre_kv_memory_insert(attendre_kv_memory* memory, const attendre_chunk* rows) {
  return guard([&]() -> Outcome {
    ATTENDRE_C_NEED(memory, "attendre_kv_memory_insert: memory");
    attendre_kv_memory& m = *memory;
    ATTENDRE_TRY_ASSIGN(const ChunkView view, chunk_view(rows, "rows", m.config.shape, m.config.chunk,
                                                         "attendre_kv_memory_insert"));
    ATTENDRE_TRY(m.memory->insert(view));
    return ATTENDRE_OK;
  });
}

attendre_status attendre_kv_memory_retrieve(attendre_kv_memory* memory, const attendre_chunk* queries,
                                            float* outputs, size_t* count) {
  return guard([&]() -> Outcome {
    const char* what = "attendre_kv_memory_retrieve";
    ATTENDRE_C_NEED(memory, "attendre_kv_memory_retrieve: memory");
    attendre_kv_memory& m = *memory;
    ATTENDRE_TRY_ASSIGN(const ChunkView view, chunk_view(queries, "queries", m.config.shape, m.max_queries, what));
    size_t valid = view.rows;
    if (!view.valid.empty()) valid = static_cast<size_t>(std::count_if(view.valid.begin(), view.valid.end(), [](uint8_t v) { return v != 0; }));
    const size_t needed = valid * m.config.shape.q_row();
    ATTENDRE_C_TRY(room(outputs, count, needed, what));
    ATTENDRE_TRY_ASSIGN(const std::vector<float> out, m.memory->retrieve(view));
    return copy_out(std::span<const float>(out), outputs, count, what);
  });
}

attendre_status attendre_kv_memory_snapshot(attendre_kv_memory* memory, int64_t* positions, double* scores,
                                            size_t* count) {
  return guard([&]() -> Outcome {
    ATTENDRE_C_NEED(memory, "attendre_kv_memory_snapshot: memory");
    ATTENDRE_TRY_ASSIGN(const MemorySnapshot held, memory->memory->snapshot());
    return snapshot_out(held, positions, scores, count, "attendre_kv_memory_snapshot");
  });
}

attendre_status attendre_kv_memory_record_insert(attendre_kv_memory* memory, void* command_buffer,
                                                 const attendre_chunk* rows, const attendre_buffer_range* kv,
                                                 uint32_t consumer_stages, uint32_t consumer_access) {
  return guard([&]() -> Outcome {
    const char* what = "attendre_kv_memory_record_insert";
    ATTENDRE_C_NEED(memory, "attendre_kv_memory_record_insert: memory");
    attendre_kv_memory& m = *memory;
    ATTENDRE_TRY_ASSIGN(const VkCommandBuffer cb, capi::command_buffer(command_buffer, what));
    ATTENDRE_TRY_ASSIGN(const ChunkView view, chunk_view(rows, "rows", m.config.shape, m.config.chunk, what));
    ATTENDRE_TRY(m.memory->record_insert(cb, view, kv ? buffer_range(&kv[0]) : std::nullopt,
                                             kv ? buffer_range(&kv[1]) : std::nullopt,
                                             consumer(consumer_stages, consumer_access)));
    return ATTENDRE_OK;
  });
}

attendre_status attendre_kv_memory_record_retrieve(attendre_kv_memory* memory, void* command_buffer,
                                                   const attendre_chunk* queries, const attendre_buffer_range* q,
                                                   const attendre_buffer_range* outputs, uint32_t consumer_stages,
                                                   uint32_t consumer_access) {
  return guard([&]() -> Outcome {
    const char* what = "attendre_kv_memory_record_retrieve";
    ATTENDRE_C_NEED(memory, "attendre_kv_memory_record_retrieve: memory");
    attendre_kv_memory& m = *memory;
    ATTENDRE_TRY_ASSIGN(const VkCommandBuffer cb, capi::command_buffer(command_buffer, what));
    ATTENDRE_TRY_ASSIGN(const ChunkView view, chunk_view(queries, "queries", m.config.shape, m.max_queries, what));
    gpu::LayerOutputs out;
    out.outputs = buffer_range(outputs);
    out.consumer = consumer(consumer_stages, consumer_access);
    ATTENDRE_TRY(m.memory->record_retrieve(cb, view, buffer_range(q), out));
    return ATTENDRE_OK;
  });
}

attendre_status attendre_layer_create(attendre_context* context, const attendre_layer_config* config,
                                      attendre_layer** layer) {
  return guard([&]() -> Outcome {
    ATTENDRE_C_NEED(layer, "attendre_layer_create: layer");
    *layer = nullptr;
    ATTENDRE_C_NEED(context, "attendre_layer_create: context");
    Context& c = context->context;
    auto handle = std::make_unique<attendre_layer>();
    ATTENDRE_C_NEED(config, "attendre_layer_create: config");
    ATTENDRE_TRY_ASSIGN(const LayerConfig checked, layer_config(*config));
    ATTENDRE_TRY_ASSIGN(handle->layer, gpu::Layer::create(c, checked));
    *layer = handle.release();
    return ATTENDRE_OK;
  });
}

void attendre_layer_destroy(attendre_layer* layer) { delete layer; }

attendre_status attendre_layer_step(attendre_layer* layer, const attendre_chunk* chunk) {
  return guard([&]() -> Outcome {
    ATTENDRE_C_NEED(layer, "attendre_layer_step: layer");
    attendre_layer& l = *layer;
    l.last = {};  // a failed step leaves no results (attendre.h)
    const LayerConfig& config = l.layer->config();
    ATTENDRE_TRY_ASSIGN(const ChunkView view, chunk_view(chunk, "chunk", config.shape, config.chunk, "attendre_layer_step"));
    ATTENDRE_TRY_ASSIGN(l.last, l.layer->step(view));
    return ATTENDRE_OK;
  });
}

attendre_status attendre_layer_record(attendre_layer* layer, void* command_buffer, const attendre_chunk* chunk,
                                      const attendre_buffer_range* qkv, const attendre_buffer_range* outputs,
                                      uint32_t consumer_stages, uint32_t consumer_access, int64_t* positions,
                                      size_t* count) {
  return guard([&]() -> Outcome {
    const char* what = "attendre_layer_record";
    ATTENDRE_C_NEED(layer, "attendre_layer_record: layer");
    attendre_layer& l = *layer;
    const LayerConfig& config = l.layer->config();
    // Recording commits the step, so the positions' room is checked first
    // (too small changes nothing): a step emits at most S queries.
    if (count) ATTENDRE_C_TRY(room(positions, count, config.chunk, what));
    l.last = {};  // any other failure leaves no results (attendre.h)
    ATTENDRE_TRY_ASSIGN(const VkCommandBuffer cb, capi::command_buffer(command_buffer, what));
    gpu::LayerInputs in;
    ATTENDRE_TRY_ASSIGN(in.chunk, chunk_view(chunk, "chunk", config.shape, config.chunk, what));
    if (qkv) {
      in.q = buffer_range(qkv[0]);
      in.k = buffer_range(qkv[1]);
      in.v = buffer_range(qkv[2]);
    }
    gpu::LayerOutputs out;
    if (outputs) out.outputs = buffer_range(*outputs);
    out.consumer = consumer(consumer_stages, consumer_access);
    ATTENDRE_TRY_ASSIGN(gpu::RecordedStep recorded, l.layer->record(cb, in, out));
    l.last.emitted_positions = std::move(recorded.emitted_positions);
    if (count) return copy_out(std::span<const int64_t>(l.last.emitted_positions), positions, count, what);
    return ATTENDRE_OK;
  });
}

attendre_status attendre_layer_submit(attendre_layer* layer, const attendre_chunk* chunk,
                                      const attendre_submit_options* options, attendre_ticket** ticket) {
  return guard([&]() -> Outcome {
    const char* what = "attendre_layer_submit";
    ATTENDRE_C_NEED(layer, "attendre_layer_submit: layer");
    attendre_layer& l = *layer;
    const LayerConfig& config = l.layer->config();
    ATTENDRE_TRY_ASSIGN(const ChunkView view, chunk_view(chunk, "chunk", config.shape, config.chunk, what));
    ATTENDRE_TRY_ASSIGN(const SubmitOptions o, submit_options(options, what));
    return ticket_out(ticket, what, [&] { return l.layer->submit(view, {}, o); });
  });
}

attendre_status attendre_layer_result(attendre_layer* layer, const attendre_ticket* ticket) {
  return guard([&]() -> Outcome {
    ATTENDRE_C_NEED(layer, "attendre_layer_result: layer");
    attendre_layer& l = *layer;
    l.last = {};
    ATTENDRE_C_NEED(ticket, "attendre_layer_result: ticket");
    ATTENDRE_TRY_ASSIGN(l.last, l.layer->result(ticket->ticket));
    return ATTENDRE_OK;
  });
}

attendre_status attendre_layer_drain_step(attendre_layer* layer) {
  return guard([&]() -> Outcome {
    ATTENDRE_C_NEED(layer, "attendre_layer_drain_step: layer");
    attendre_layer& l = *layer;
    l.last = {};
    ATTENDRE_TRY_ASSIGN(l.last, l.layer->drain_step());
    return ATTENDRE_OK;
  });
}

attendre_status attendre_layer_flush(attendre_layer* layer) {
  return guard([&]() -> Outcome {
    ATTENDRE_C_NEED(layer, "attendre_layer_flush: layer");
    attendre_layer& l = *layer;
    l.last = {};
    ATTENDRE_TRY_ASSIGN(l.last, l.layer->flush());
    return ATTENDRE_OK;
  });
}

attendre_status attendre_layer_has_pending(const attendre_layer* layer, int* pending) {
  return guard([&]() -> Outcome {
    ATTENDRE_C_NEED(layer, "attendre_layer_has_pending: layer");
    ATTENDRE_C_NEED(pending, "attendre_layer_has_pending: pending");
    *pending = layer->layer->has_pending_queries() ? 1 : 0;
    return ATTENDRE_OK;
  });
}

attendre_status attendre_layer_output(const attendre_layer* layer, int64_t* positions, size_t* position_count,
                                      float* outputs, size_t* output_count) {
  return guard([&]() -> Outcome {
    const char* what = "attendre_layer_output";
    ATTENDRE_C_NEED(layer, "attendre_layer_output: layer");
    const StepResult& last = layer->last;
    ATTENDRE_C_NEED(position_count, std::string(what) + " count");
    ATTENDRE_C_NEED(output_count, std::string(what) + " count");
    const bool p = fits(positions, *position_count, last.emitted_positions.size());
    const bool o = fits(outputs, *output_count, last.outputs.size());
    if (!p || !o) return too_small(what, p ? last.outputs.size() : last.emitted_positions.size());
    ATTENDRE_C_TRY(copy_out(std::span<const int64_t>(last.emitted_positions), positions, position_count, what));
    return copy_out(std::span<const float>(last.outputs), outputs, output_count, what);
  });
}

attendre_status attendre_layer_snapshot(attendre_layer* layer, int64_t* positions, double* scores, size_t* count) {
  return guard([&]() -> Outcome {
    ATTENDRE_C_NEED(layer, "attendre_layer_snapshot: layer");
    ATTENDRE_TRY_ASSIGN(const MemorySnapshot held, layer->layer->snapshot());
    return snapshot_out(held, positions, scores, count, "attendre_layer_snapshot");
  });
}

}  // extern "C"
