// Stacks, generation and reading a document.
#include "capi/capi.hpp"

#include <attendre/generate.hpp>
#include <attendre/reading.hpp>

using namespace attendre;
using namespace attendre::capi;

namespace {

Result<StackConfig> stack_config(const attendre_stack_config& c) {
  StackConfig config;
  config.hidden = c.hidden;
  config.vocab = c.vocab;
  BlockConfig block;
  block.attention.shape = {c.heads_q, c.heads_kv, c.head_dim};
  block.ffn = c.ffn;
  config.blocks.assign(c.blocks, block);
  MemoryPlan plan;
  plan.chunk = c.memory.chunk;
  ATTENDRE_TRY_ASSIGN(plan.all, memory_setting(c.memory));
  plan.flush_capable = c.memory.flush_capable != 0;
  plan.activations = c.memory.fp16_activations ? MemoryStorage::f16 : MemoryStorage::f32;
  ATTENDRE_TRY(apply_memory(config, plan));
  ATTENDRE_TRY(config.check());
  return config;
}

// The model's plan under a C setting: M = 0 is the model's full context
// (the trained length, at least S); every other field applies as given and
// is checked as for any M.
Result<MemoryPlan> model_plan(const Model& model, const attendre_memory_setting* s) {
  MemoryPlan plan = model.default_memory();
  if (!s) return plan;
  plan.chunk = s->chunk;
  plan.flush_capable = s->flush_capable != 0;
  plan.activations = s->fp16_activations ? MemoryStorage::f16 : MemoryStorage::f32;
  std::optional<uint32_t> capacity;
  if (s->kv_capacity == 0) {
    ATTENDRE_TRY_ASSIGN(const MemorySetting full, MemorySetting::full_context(model.info().context_length, s->chunk));
    capacity = full.kv.capacity;  // K = 0 then stays K = M
  }
  ATTENDRE_TRY_ASSIGN(plan.all, memory_setting(*s, capacity));
  return plan;
}

Result<StackChunk> stack_chunk(const attendre_stack_chunk* chunk, const char* chunk_name, const StackConfig& config,
                               uint32_t max_rows, const char* what) {
  ATTENDRE_C_NEED(chunk, std::string(what) + ": " + chunk_name);
  const attendre_stack_chunk& c = *chunk;
  ATTENDRE_REQUIRE(c.rows <= max_rows, std::string(what) + ": " + std::to_string(c.rows) + " rows, at most " +
                                           std::to_string(max_rows) + " fit");
  StackChunk view;
  view.rows = c.rows;
  if (c.tokens) view.tokens = std::span(c.tokens, c.rows);
  if (c.embeddings) view.embeddings = std::span(c.embeddings, size_t{c.rows} * config.hidden);
  if (c.positions) view.positions = std::span(c.positions, c.rows);
  if (c.valid) view.valid = std::span(c.valid, c.rows);
  return view;
}

Result<StackRequest> request(uint32_t want, const char* what) {
  ATTENDRE_REQUIRE((want & ~(ATTENDRE_WANT_HIDDEN | ATTENDRE_WANT_LOGITS)) == 0,
                   std::string(what) + ": want " + std::to_string(want) + " has flags past ATTENDRE_WANT_LOGITS");
  return StackRequest{(want & ATTENDRE_WANT_HIDDEN) != 0, (want & ATTENDRE_WANT_LOGITS) != 0};
}

Result<GenerateOptions> generate_options(const attendre_generate_options* o, const char* what) {
  attendre_generate_options defaults;
  attendre_generate_options_defaults(&defaults);
  const attendre_generate_options& c = o ? *o : defaults;
  GenerateOptions options;
  options.max_tokens = c.max_tokens;
  options.sampling = {c.temperature, c.top_p, c.seed};
  ATTENDRE_TRY(options.sampling.check());
  if (c.stop_count > 0) {
    ATTENDRE_REQUIRE(c.stop_tokens != nullptr, std::string(what) + ": stop_tokens is NULL with stop_count " +
                                                   std::to_string(c.stop_count));
    options.stop_tokens.assign(c.stop_tokens, c.stop_tokens + c.stop_count);
  }
  options.flush = c.flush != 0;
  return options;
}

// A generation's tokens into the caller's buffer, checked before it runs
// (`run` returns a Result<GenerateResult>).
template <class Run>
Outcome generated(const GenerateOptions& options, uint32_t* tokens, size_t* count, int* stopped, const char* what,
                  Run&& run) {
  ATTENDRE_C_TRY(room(tokens, count, options.max_tokens, what));
  ATTENDRE_TRY_ASSIGN(const GenerateResult result, run());
  if (stopped) *stopped = result.stopped ? 1 : 0;
  return copy_out(std::span<const uint32_t>(result.tokens), tokens, count, what);
}

// invalid_argument "<what>: stack is NULL" from the enclosing body unless `stack` is set.
#define ATTENDRE_C_NEED_STACK(stack, what) ATTENDRE_C_NEED(stack, std::string(what) + ": stack")

}  // namespace

extern "C" {

void attendre_stack_config_defaults(attendre_stack_config* config) {
  if (!config) return;
  *config = attendre_stack_config{};
  config->hidden = 64;
  config->vocab = 256;
  config->blocks = 2;
  config->heads_q = 4;
  config->heads_kv = 2;
  config->head_dim = 16;
  config->ffn = 128;
  attendre_memory_setting_defaults(&config->memory);
  config->memory.chunk = 8;
  config->memory.q_capacity = 4;
  config->memory.kv_capacity = 32;
  config->memory.top_k = 8;
}

attendre_status attendre_stack_create(attendre_context* context, const attendre_stack_config* config,
                                      attendre_stack** stack) {
  return guard([&]() -> Outcome {
    ATTENDRE_C_NEED(stack, "attendre_stack_create: stack");
    *stack = nullptr;
    ATTENDRE_C_NEED(context, "attendre_stack_create: context");
    Context& c = context->context;
    ATTENDRE_C_NEED(config, "attendre_stack_create: config");
    RandomWeights weights(config->seed);
    auto handle = std::make_unique<attendre_stack>();
    ATTENDRE_TRY_ASSIGN(const StackConfig checked, stack_config(*config));
    ATTENDRE_TRY_ASSIGN(handle->stack, gpu::Stack::create(c, checked, weights));
    *stack = handle.release();
    return ATTENDRE_OK;
  });
}

attendre_status attendre_stack_create_from_model(attendre_context* context, attendre_model* model,
                                                 const attendre_memory_setting* memory, attendre_stack** stack) {
  return guard([&]() -> Outcome {
    ATTENDRE_C_NEED(stack, "attendre_stack_create_from_model: stack");
    *stack = nullptr;
    ATTENDRE_C_NEED(context, "attendre_stack_create_from_model: context");
    Context& c = context->context;
    ATTENDRE_C_NEED(model, "attendre_stack_create_from_model: model");
    Model& m = model->model;
    auto handle = std::make_unique<attendre_stack>();
    ATTENDRE_TRY_ASSIGN(const MemoryPlan plan, model_plan(m, memory));
    ATTENDRE_TRY_ASSIGN(const StackConfig checked, m.stack_config(plan));
    ATTENDRE_TRY_ASSIGN(handle->stack, gpu::Stack::create(c, checked, m.weights()));
    *stack = handle.release();
    return ATTENDRE_OK;
  });
}

void attendre_stack_destroy(attendre_stack* stack) { delete stack; }

attendre_status attendre_stack_info_get(const attendre_stack* stack, attendre_stack_info* info) {
  return guard([&]() -> Outcome {
    ATTENDRE_C_NEED(stack, "attendre_stack_info_get: stack");
    const gpu::Stack& s = *stack->stack;
    ATTENDRE_C_NEED(info, "attendre_stack_info_get: info");
    attendre_stack_info& out = *info;
    const StackConfig& config = s.config();
    out.hidden = config.hidden;
    out.vocab = config.vocab;
    out.chunk = config.chunk;
    out.blocks = static_cast<uint32_t>(config.blocks.size());
    out.drain_positions = config.drain_positions();
    out.device_bytes = s.memory().total();
    return ATTENDRE_OK;
  });
}

attendre_status attendre_stack_step(attendre_stack* stack, const attendre_stack_chunk* chunk, uint32_t want) {
  return guard([&]() -> Outcome {
    const char* what = "attendre_stack_step";
    ATTENDRE_C_NEED_STACK(stack, what);
    attendre_stack& s = *stack;
    s.output = {};  // a failed step leaves no results (attendre.h)
    const StackConfig& config = s.stack->config();
    ATTENDRE_TRY_ASSIGN(const StackChunk c, stack_chunk(chunk, "chunk", config, config.chunk, what));
    ATTENDRE_TRY_ASSIGN(const StackRequest r, request(want, what));
    ATTENDRE_TRY_ASSIGN(s.output, s.stack->step(c, r));
    return ATTENDRE_OK;
  });
}

attendre_status attendre_stack_finish(attendre_stack* stack, int flush, uint32_t want) {
  return guard([&]() -> Outcome {
    ATTENDRE_C_NEED_STACK(stack, "attendre_stack_finish");
    attendre_stack& s = *stack;
    s.output = {};
    ATTENDRE_TRY_ASSIGN(const StackRequest r, request(want, "attendre_stack_finish"));
    ATTENDRE_TRY_ASSIGN(s.output, s.stack->finish(r, flush != 0));
    return ATTENDRE_OK;
  });
}

attendre_status attendre_stack_decode(attendre_stack* stack, const attendre_stack_chunk* one, uint32_t want) {
  return guard([&]() -> Outcome {
    const char* what = "attendre_stack_decode";
    ATTENDRE_C_NEED_STACK(stack, what);
    attendre_stack& s = *stack;
    s.output = {};
    ATTENDRE_TRY_ASSIGN(const StackChunk c, stack_chunk(one, "one", s.stack->config(), 1, what));
    ATTENDRE_TRY_ASSIGN(const StackRequest r, request(want, what));
    ATTENDRE_TRY_ASSIGN(s.output, s.stack->decode(c, r));
    return ATTENDRE_OK;
  });
}

attendre_status attendre_stack_has_pending(const attendre_stack* stack, int* pending) {
  return guard([&]() -> Outcome {
    ATTENDRE_C_NEED(stack, "attendre_stack_has_pending: stack");
    ATTENDRE_C_NEED(pending, "attendre_stack_has_pending: pending");
    *pending = stack->stack->has_pending() ? 1 : 0;
    return ATTENDRE_OK;
  });
}

attendre_status attendre_stack_output_positions(const attendre_stack* stack, int64_t* positions, size_t* count) {
  return guard([&]() -> Outcome {
    ATTENDRE_C_NEED(stack, "attendre_stack_output_positions: stack");
    return copy_out(std::span<const int64_t>(stack->output.positions), positions, count,
                    "attendre_stack_output_positions");
  });
}

attendre_status attendre_stack_output_hidden(const attendre_stack* stack, float* hidden, size_t* count) {
  return guard([&]() -> Outcome {
    ATTENDRE_C_NEED(stack, "attendre_stack_output_hidden: stack");
    return copy_out(std::span<const float>(stack->output.hidden), hidden, count, "attendre_stack_output_hidden");
  });
}

attendre_status attendre_stack_output_logits(const attendre_stack* stack, float* logits, size_t* count) {
  return guard([&]() -> Outcome {
    ATTENDRE_C_NEED(stack, "attendre_stack_output_logits: stack");
    return copy_out(std::span<const float>(stack->output.logits), logits, count, "attendre_stack_output_logits");
  });
}

attendre_status attendre_stack_submit(attendre_stack* stack, const attendre_stack_chunk* chunk, uint32_t want,
                                      const attendre_submit_options* options, attendre_ticket** ticket) {
  return guard([&]() -> Outcome {
    const char* what = "attendre_stack_submit";
    ATTENDRE_C_NEED_STACK(stack, what);
    attendre_stack& s = *stack;
    const StackConfig& config = s.stack->config();
    ATTENDRE_TRY_ASSIGN(const StackChunk c, stack_chunk(chunk, "chunk", config, config.chunk, what));
    ATTENDRE_TRY_ASSIGN(const StackRequest r, request(want, what));
    ATTENDRE_TRY_ASSIGN(const SubmitOptions o, submit_options(options, what));
    return ticket_out(ticket, what, [&] { return s.stack->submit(c, r, o); });
  });
}

attendre_status attendre_stack_result(attendre_stack* stack, const attendre_ticket* ticket) {
  return guard([&]() -> Outcome {
    ATTENDRE_C_NEED_STACK(stack, "attendre_stack_result");
    attendre_stack& s = *stack;
    s.output = {};
    ATTENDRE_C_NEED(ticket, "attendre_stack_result: ticket");
    ATTENDRE_TRY_ASSIGN(s.output, s.stack->result(ticket->ticket));
    return ATTENDRE_OK;
  });
}

attendre_status attendre_stack_record(attendre_stack* stack, void* command_buffer, int kind, uint32_t block,
                                      const attendre_stack_chunk* chunk, const attendre_buffer_range* input,
                                      const attendre_buffer_range* hidden, const attendre_buffer_range* logits,
                                      uint32_t consumer_stages, uint32_t consumer_access) {
  return guard([&]() -> Outcome {
    const char* what = "attendre_stack_record";
    ATTENDRE_C_NEED_STACK(stack, what);
    attendre_stack& s = *stack;
    s.output = {};
    ATTENDRE_TRY_ASSIGN(const VkCommandBuffer cb, capi::command_buffer(command_buffer, what));
    const StackConfig& config = s.stack->config();
    gpu::StackRecordOutputs out;
    out.hidden = buffer_range(hidden);
    out.logits = buffer_range(logits);
    out.consumer = consumer(consumer_stages, consumer_access);
    gpu::RecordedStep recorded;
    if (kind == ATTENDRE_RECORD_FLUSH) {
      ATTENDRE_REQUIRE(!chunk && !input, "attendre_stack_record: a flush takes no chunk and no input");
      ATTENDRE_REQUIRE(block < config.blocks.size(), "attendre_stack_record: block " + std::to_string(block) +
                                                         " of a stack of " + std::to_string(config.blocks.size()) +
                                                         " blocks");
      ATTENDRE_TRY_ASSIGN(recorded, s.stack->record_flush(cb, block, out));
    } else {
      ATTENDRE_REQUIRE(kind == ATTENDRE_RECORD_STEP || kind == ATTENDRE_RECORD_DECODE,
                       "attendre_stack_record: kind " + std::to_string(kind) + " is none of ATTENDRE_RECORD_*");
      const bool decode = kind == ATTENDRE_RECORD_DECODE;
      gpu::StackRecordInputs in;
      ATTENDRE_TRY_ASSIGN(in.chunk, stack_chunk(chunk, "chunk", config, decode ? 1 : config.chunk, what));
      (config.vocab > 0 ? in.tokens : in.embeddings) = buffer_range(input);
      ATTENDRE_TRY_ASSIGN(recorded, decode ? s.stack->record_decode(cb, in, out) : s.stack->record(cb, in, out));
    }
    s.output.positions = std::move(recorded.emitted_positions);
    return ATTENDRE_OK;
  });
}

attendre_status attendre_stack_snapshot(attendre_stack* stack, uint32_t block, int64_t* positions, double* scores,
                                        size_t* count) {
  return guard([&]() -> Outcome {
    ATTENDRE_C_NEED_STACK(stack, "attendre_stack_snapshot");
    gpu::Stack& s = *stack->stack;
    const size_t blocks = s.config().blocks.size();
    ATTENDRE_REQUIRE(block < blocks, "attendre_stack_snapshot: block " + std::to_string(block) + " of a stack of " +
                                         std::to_string(blocks) + " blocks");
    ATTENDRE_TRY_ASSIGN(const MemorySnapshot held, s.snapshot(block));
    return snapshot_out(held, positions, scores, count, "attendre_stack_snapshot");
  });
}

void attendre_generate_options_defaults(attendre_generate_options* options) {
  if (!options) return;
  *options = attendre_generate_options{};
  const GenerateOptions defaults;
  options->max_tokens = defaults.max_tokens;
  options->temperature = defaults.sampling.temperature;
  options->top_p = defaults.sampling.top_p;
  options->seed = defaults.sampling.seed;
}

attendre_status attendre_generate(attendre_stack* stack, const uint32_t* prompt, size_t prompt_count,
                                  const attendre_generate_options* options, uint32_t* tokens, size_t* count,
                                  int* stopped) {
  return guard([&]() -> Outcome {
    const char* what = "attendre_generate";
    ATTENDRE_C_NEED_STACK(stack, what);
    attendre_stack& s = *stack;
    if (prompt_count > 0) ATTENDRE_C_NEED(prompt, "attendre_generate: prompt");
    ATTENDRE_TRY_ASSIGN(const GenerateOptions o, generate_options(options, what));
    return generated(o, tokens, count, stopped, what, [&] {
      s.output = {};
      return generate(*s.stack, std::span<const uint32_t>(prompt, prompt_count), o);
    });
  });
}

attendre_status attendre_generate_after(attendre_stack* stack, const float* last_logits, size_t vocab,
                                        int64_t next_position, const attendre_generate_options* options,
                                        uint32_t* tokens, size_t* count, int* stopped) {
  return guard([&]() -> Outcome {
    const char* what = "attendre_generate_after";
    ATTENDRE_C_NEED_STACK(stack, what);
    attendre_stack& s = *stack;
    if (vocab > 0) ATTENDRE_C_NEED(last_logits, "attendre_generate_after: last_logits");
    ATTENDRE_TRY_ASSIGN(const GenerateOptions o, generate_options(options, what));
    return generated(o, tokens, count, stopped, what, [&] {
      s.output = {};
      return generate_after(*s.stack, std::span<const float>(last_logits, vocab), next_position, o);
    });
  });
}

attendre_status attendre_read_document(attendre_stack* stack, const attendre_model* model, const char* question,
                                       const char* context, size_t context_length, uint32_t answer_tokens, int flush,
                                       char* answer, size_t* count, uint64_t* document_tokens) {
  return guard([&]() -> Outcome {
    const char* what = "attendre_read_document";
    ATTENDRE_C_NEED_STACK(stack, what);
    attendre_stack& s = *stack;
    ATTENDRE_C_NEED(model, "attendre_read_document: model");
    const Model& m = model->model;
    ATTENDRE_C_NEED(question, "attendre_read_document: question");
    if (context_length > 0) ATTENDRE_C_NEED(context, "attendre_read_document: context");
    ATTENDRE_C_NEED(count, "attendre_read_document: count");
    ReadOptions options;
    options.answer_tokens = answer_tokens;
    options.flush = flush != 0;
    s.output = {};
    s.answer.clear();
    ATTENDRE_TRY_ASSIGN(const ReadResult result, read_document(*s.stack, m.tokenizer(), question,
                                                                   std::string_view(context ? context : "", context_length),
                                                                   options));
    s.answer = result.answer.text;
    if (document_tokens) *document_tokens = result.document_tokens;
    return copy_text(s.answer, answer, count, what);
  });
}

attendre_status attendre_stack_answer(const attendre_stack* stack, char* answer, size_t* count) {
  return guard([&]() -> Outcome {
    ATTENDRE_C_NEED(stack, "attendre_stack_answer: stack");
    return copy_text(stack->answer, answer, count, "attendre_stack_answer");
  });
}

}  // extern "C"
