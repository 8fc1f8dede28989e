// Stacks, generation and reading a document.
#include "capi/capi.hpp"

#include <attendre/generate.hpp>
#include <attendre/reading.hpp>

using namespace attendre;
using namespace attendre::capi;

namespace {

StackConfig stack_config(const attendre_stack_config& c) {
  StackConfig config;
  config.hidden = c.hidden;
  config.vocab = c.vocab;
  BlockConfig block;
  block.attention.shape = {c.heads_q, c.heads_kv, c.head_dim};
  block.ffn = c.ffn;
  config.blocks.assign(c.blocks, block);
  MemoryPlan plan;
  plan.chunk = c.memory.chunk;
  plan.all = memory_setting(c.memory);
  plan.flush_capable = c.memory.flush_capable != 0;
  apply_memory(config, plan);
  config.validate();
  return config;
}

// The model's plan under a C setting: M = 0 keeps the model's full context.
MemoryPlan model_plan(const Model& model, const attendre_memory_setting* s) {
  MemoryPlan plan = model.default_memory();
  if (!s) return plan;
  plan.chunk = s->chunk;
  plan.flush_capable = s->flush_capable != 0;
  plan.all = s->kv_capacity == 0 ? MemorySetting::full_context(model.info().context_length, s->chunk) : memory_setting(*s);
  return plan;
}

StackChunk stack_chunk(const attendre_stack_chunk& c, const StackConfig& config, uint32_t max_rows, const char* what) {
  require(c.rows <= max_rows,
          std::string(what) + ": " + std::to_string(c.rows) + " rows, at most " + std::to_string(max_rows) + " fit");
  StackChunk chunk;
  chunk.rows = c.rows;
  if (c.tokens) chunk.tokens = std::span(c.tokens, c.rows);
  if (c.embeddings) chunk.embeddings = std::span(c.embeddings, size_t{c.rows} * config.hidden);
  if (c.positions) chunk.positions = std::span(c.positions, c.rows);
  if (c.valid) chunk.valid = std::span(c.valid, c.rows);
  return chunk;
}

StackRequest request(uint32_t want, const char* what) {
  require((want & ~(ATTENDRE_WANT_HIDDEN | ATTENDRE_WANT_LOGITS)) == 0,
          std::string(what) + ": want " + std::to_string(want) + " has flags past ATTENDRE_WANT_LOGITS");
  return {(want & ATTENDRE_WANT_HIDDEN) != 0, (want & ATTENDRE_WANT_LOGITS) != 0};
}

GenerateOptions generate_options(const attendre_generate_options* o, const char* what) {
  attendre_generate_options defaults;
  attendre_generate_options_defaults(&defaults);
  const attendre_generate_options& c = o ? *o : defaults;
  GenerateOptions options;
  options.max_tokens = c.max_tokens;
  options.sampling = {c.temperature, c.top_p, c.seed};
  options.sampling.validate();
  if (c.stop_count > 0) {
    require(c.stop_tokens != nullptr, std::string(what) + ": stop_tokens is NULL with stop_count " +
                                          std::to_string(c.stop_count));
    options.stop_tokens.assign(c.stop_tokens, c.stop_tokens + c.stop_count);
  }
  options.flush = c.flush != 0;
  return options;
}

// A generation's tokens into the caller's buffer, checked before it runs.
template <class Run>
attendre_status generated(const GenerateOptions& options, uint32_t* tokens, size_t* count, int* stopped,
                          const char* what, Run&& run) {
  if (!fits(tokens, count, options.max_tokens, what)) return too_small(what, options.max_tokens);
  const GenerateResult result = run();
  if (stopped) *stopped = result.stopped ? 1 : 0;
  return copy_out(std::span<const uint32_t>(result.tokens), tokens, count, what);
}

attendre_stack& stack_of(attendre_stack* stack, const char* what) {
  return need(stack, (std::string(what) + ": stack").c_str());
}

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
  return guard([&] {
    need(stack, "attendre_stack_create: stack");
    *stack = nullptr;
    Context& c = need(context, "attendre_stack_create: context").context;
    const attendre_stack_config& cc = need(config, "attendre_stack_create: config");
    RandomWeights weights(cc.seed);
    auto handle = std::make_unique<attendre_stack>();
    handle->stack = std::make_unique<gpu::Stack>(c, stack_config(cc), weights);
    *stack = handle.release();
    return ATTENDRE_OK;
  });
}

attendre_status attendre_stack_create_from_model(attendre_context* context, attendre_model* model,
                                                 const attendre_memory_setting* memory, attendre_stack** stack) {
  return guard([&] {
    need(stack, "attendre_stack_create_from_model: stack");
    *stack = nullptr;
    Context& c = need(context, "attendre_stack_create_from_model: context").context;
    Model& m = need(model, "attendre_stack_create_from_model: model").model;
    auto handle = std::make_unique<attendre_stack>();
    handle->stack = std::make_unique<gpu::Stack>(c, m.stack_config(model_plan(m, memory)), m.weights());
    *stack = handle.release();
    return ATTENDRE_OK;
  });
}

void attendre_stack_destroy(attendre_stack* stack) { delete stack; }

attendre_status attendre_stack_info_get(const attendre_stack* stack, attendre_stack_info* info) {
  return guard([&] {
    const gpu::Stack& s = *need(stack, "attendre_stack_info_get: stack").stack;
    attendre_stack_info& out = need(info, "attendre_stack_info_get: info");
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
  return guard([&] {
    attendre_stack& s = stack_of(stack, "attendre_stack_step");
    const StackConfig& config = s.stack->config();
    const StackChunk c = stack_chunk(need(chunk, "attendre_stack_step: chunk"), config, config.chunk, "attendre_stack_step");
    s.output = {};
    s.output = s.stack->step(c, request(want, "attendre_stack_step"));
    return ATTENDRE_OK;
  });
}

attendre_status attendre_stack_finish(attendre_stack* stack, int flush, uint32_t want) {
  return guard([&] {
    attendre_stack& s = stack_of(stack, "attendre_stack_finish");
    const StackRequest r = request(want, "attendre_stack_finish");
    s.output = {};
    s.output = s.stack->finish(r, flush != 0);
    return ATTENDRE_OK;
  });
}

attendre_status attendre_stack_decode(attendre_stack* stack, const attendre_stack_chunk* one, uint32_t want) {
  return guard([&] {
    attendre_stack& s = stack_of(stack, "attendre_stack_decode");
    const StackChunk c = stack_chunk(need(one, "attendre_stack_decode: one"), s.stack->config(), 1, "attendre_stack_decode");
    s.output = {};
    s.output = s.stack->decode(c, request(want, "attendre_stack_decode"));
    return ATTENDRE_OK;
  });
}

attendre_status attendre_stack_has_pending(const attendre_stack* stack, int* pending) {
  return guard([&] {
    need(pending, "attendre_stack_has_pending: pending") =
        need(stack, "attendre_stack_has_pending: stack").stack->has_pending() ? 1 : 0;
    return ATTENDRE_OK;
  });
}

attendre_status attendre_stack_output_positions(const attendre_stack* stack, int64_t* positions, size_t* count) {
  return guard([&] {
    return copy_out(std::span<const int64_t>(need(stack, "attendre_stack_output_positions: stack").output.positions),
                    positions, count, "attendre_stack_output_positions");
  });
}

attendre_status attendre_stack_output_hidden(const attendre_stack* stack, float* hidden, size_t* count) {
  return guard([&] {
    return copy_out(std::span<const float>(need(stack, "attendre_stack_output_hidden: stack").output.hidden), hidden,
                    count, "attendre_stack_output_hidden");
  });
}

attendre_status attendre_stack_output_logits(const attendre_stack* stack, float* logits, size_t* count) {
  return guard([&] {
    return copy_out(std::span<const float>(need(stack, "attendre_stack_output_logits: stack").output.logits), logits,
                    count, "attendre_stack_output_logits");
  });
}

attendre_status attendre_stack_submit(attendre_stack* stack, const attendre_stack_chunk* chunk, uint32_t want,
                                      const attendre_submit_options* options, attendre_ticket** ticket) {
  return guard([&] {
    const char* what = "attendre_stack_submit";
    attendre_stack& s = stack_of(stack, what);
    const StackConfig& config = s.stack->config();
    const StackChunk c = stack_chunk(need(chunk, "attendre_stack_submit: chunk"), config, config.chunk, what);
    const StackRequest r = request(want, what);
    const SubmitOptions o = submit_options(options, what);
    return ticket_out(ticket, what, [&] { return s.stack->submit(c, r, o); });
  });
}

attendre_status attendre_stack_result(attendre_stack* stack, const attendre_ticket* ticket) {
  return guard([&] {
    attendre_stack& s = stack_of(stack, "attendre_stack_result");
    const Ticket& t = need(ticket, "attendre_stack_result: ticket").ticket;
    s.output = {};
    s.output = s.stack->result(t);
    return ATTENDRE_OK;
  });
}

attendre_status attendre_stack_record(attendre_stack* stack, void* command_buffer, int kind, uint32_t block,
                                      const attendre_stack_chunk* chunk, const attendre_buffer_range* input,
                                      const attendre_buffer_range* hidden, const attendre_buffer_range* logits,
                                      uint32_t consumer_stages, uint32_t consumer_access) {
  return guard([&] {
    const char* what = "attendre_stack_record";
    attendre_stack& s = stack_of(stack, what);
    const VkCommandBuffer cb = capi::command_buffer(command_buffer, what);
    const StackConfig& config = s.stack->config();
    gpu::StackRecordOutputs out;
    out.hidden = buffer_range(hidden);
    out.logits = buffer_range(logits);
    out.consumer = consumer(consumer_stages, consumer_access);
    gpu::RecordedStep recorded;
    if (kind == ATTENDRE_RECORD_FLUSH) {
      require(!chunk && !input, "attendre_stack_record: a flush takes no chunk and no input");
      require(block < config.blocks.size(), "attendre_stack_record: block " + std::to_string(block) +
                                                " of a stack of " + std::to_string(config.blocks.size()) + " blocks");
      recorded = s.stack->record_flush(cb, block, out);
    } else {
      require(kind == ATTENDRE_RECORD_STEP || kind == ATTENDRE_RECORD_DECODE,
              "attendre_stack_record: kind " + std::to_string(kind) + " is none of ATTENDRE_RECORD_*");
      const bool decode = kind == ATTENDRE_RECORD_DECODE;
      gpu::StackRecordInputs in;
      in.chunk = stack_chunk(need(chunk, "attendre_stack_record: chunk"), config, decode ? 1 : config.chunk, what);
      (config.vocab > 0 ? in.tokens : in.embeddings) = buffer_range(input);
      recorded = decode ? s.stack->record_decode(cb, in, out) : s.stack->record(cb, in, out);
    }
    s.output = {};
    s.output.positions = std::move(recorded.emitted_positions);
    return ATTENDRE_OK;
  });
}

attendre_status attendre_stack_snapshot(attendre_stack* stack, uint32_t block, int64_t* positions, double* scores,
                                        size_t* count) {
  return guard([&] {
    gpu::Stack& s = *stack_of(stack, "attendre_stack_snapshot").stack;
    const size_t blocks = s.config().blocks.size();
    require(block < blocks, "attendre_stack_snapshot: block " + std::to_string(block) + " of a stack of " +
                                std::to_string(blocks) + " blocks");
    return snapshot_out(s.snapshot(block), positions, scores, count, "attendre_stack_snapshot");
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
  return guard([&] {
    const char* what = "attendre_generate";
    attendre_stack& s = stack_of(stack, what);
    if (prompt_count > 0) need(prompt, "attendre_generate: prompt");
    const GenerateOptions o = generate_options(options, what);
    return generated(o, tokens, count, stopped, what, [&] {
      s.output = {};
      return generate(*s.stack, std::span<const uint32_t>(prompt, prompt_count), o);
    });
  });
}

attendre_status attendre_generate_after(attendre_stack* stack, const float* last_logits, size_t vocab,
                                        int64_t next_position, const attendre_generate_options* options,
                                        uint32_t* tokens, size_t* count, int* stopped) {
  return guard([&] {
    const char* what = "attendre_generate_after";
    attendre_stack& s = stack_of(stack, what);
    if (vocab > 0) need(last_logits, "attendre_generate_after: last_logits");
    const GenerateOptions o = generate_options(options, what);
    return generated(o, tokens, count, stopped, what, [&] {
      s.output = {};
      return generate_after(*s.stack, std::span<const float>(last_logits, vocab), next_position, o);
    });
  });
}

attendre_status attendre_read_document(attendre_stack* stack, const attendre_model* model, const char* question,
                                       const char* context, size_t context_length, uint32_t answer_tokens, int flush,
                                       char* answer, size_t* count, uint64_t* document_tokens) {
  return guard([&] {
    const char* what = "attendre_read_document";
    attendre_stack& s = stack_of(stack, what);
    const Model& m = need(model, "attendre_read_document: model").model;
    need(question, "attendre_read_document: question");
    if (context_length > 0) need(context, "attendre_read_document: context");
    need(count, "attendre_read_document: count");
    ReadOptions options;
    options.answer_tokens = answer_tokens;
    options.flush = flush != 0;
    s.output = {};
    s.answer.clear();
    const ReadResult result =
        read_document(*s.stack, m.tokenizer(), question, std::string_view(context ? context : "", context_length), options);
    s.answer = result.answer.text;
    if (document_tokens) *document_tokens = result.document_tokens;
    return copy_text(s.answer, answer, count, what);
  });
}

attendre_status attendre_stack_answer(const attendre_stack* stack, char* answer, size_t* count) {
  return guard([&] {
    return copy_text(need(stack, "attendre_stack_answer: stack").answer, answer, count, "attendre_stack_answer");
  });
}

}  // extern "C"
