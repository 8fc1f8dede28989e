/* A C11 program that uses attendre only through include/attendre/attendre.h.
 *
 *   attendre_capi_program OUT [MODEL.gguf POLICY]
 *
 * Without a model: a stack with random weights, a layer and a K/V memory
 * step, drain and snapshot, and every error path below answers with its
 * code and message. With a model: it tokenizes, streams the ids through the
 * model's stack, drains, snapshots, generates greedily, and reads a
 * document with a question; OUT receives the results, one "key values..."
 * line each, which tests/capi/test_capi.cpp compares with the C++ API run on
 * the float64 reference. Exits 1 on any unexpected status or validation
 * message, printing where. */
#include <attendre/attendre.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures = 0;

/* A call that must succeed. */
#define OK(call)                                                                                    \
  do {                                                                                              \
    attendre_status status_ = (call);                                                               \
    if (status_ != ATTENDRE_OK) {                                                                   \
      fprintf(stderr, "%s:%d: %s -> %s: %s\n", __FILE__, __LINE__, #call,                          \
              attendre_status_name(status_), attendre_last_error());                                \
      exit(1);                                                                                      \
    }                                                                                               \
  } while (0)

/* A call that must fail with `expected` and a one-line message naming `word`. */
static void expect_failure(attendre_status got, attendre_status expected, const char* word, const char* call,
                           int line) {
  const char* message = attendre_last_error();
  if (got != expected || message[0] == '\0' || strchr(message, '\n') != NULL || strstr(message, word) == NULL) {
    fprintf(stderr, "line %d: %s -> %s (\"%s\"), expected %s naming \"%s\"\n", line, call, attendre_status_name(got),
            message, attendre_status_name(expected), word);
    ++failures;
  }
}
#define FAILS(call, expected, word) expect_failure((call), (expected), (word), #call, __LINE__)

#define REQUIRE(condition)                                                          \
  do {                                                                              \
    if (!(condition)) {                                                             \
      fprintf(stderr, "%s:%d: %s does not hold\n", __FILE__, __LINE__, #condition); \
      exit(1);                                                                      \
    }                                                                               \
  } while (0)

static void check_validation(attendre_context* context) {
  char none[1];
  size_t messages = 0, size = sizeof none;
  attendre_status status = attendre_context_take_validation_messages(context, &messages, none, &size);
  if (status == ATTENDRE_ERROR_BUFFER_TOO_SMALL) {
    char* text = malloc(size);
    REQUIRE(text != NULL);
    OK(attendre_context_take_validation_messages(context, &messages, text, &size));
    fprintf(stderr, "validation messages:\n%s", text);
    free(text);
    exit(1);
  }
  OK(status);
  REQUIRE(messages == 0);
}

static void print_snapshot(FILE* out, const char* key, attendre_stack* stack, uint32_t block) {
  int64_t positions[4096];
  double scores[4096];
  size_t count = 4096, i;
  OK(attendre_stack_snapshot(stack, block, positions, scores, &count));
  fprintf(out, "%s_positions %u", key, block);
  for (i = 0; i < count; ++i) fprintf(out, " %lld", (long long)positions[i]);
  fprintf(out, "\n%s_scores %u", key, block);
  for (i = 0; i < count; ++i) fprintf(out, " %.17g", scores[i]);
  fprintf(out, "\n");
}

/* Error paths that need no device: every one a code and a message. */
static void check_errors_without_device(void) {
  attendre_model* model = NULL;
  attendre_tokenizer* tokenizer = NULL;
  attendre_context* context = NULL;
  attendre_context_options options;
  size_t count = 0, point = 0;

  REQUIRE(attendre_version() == ATTENDRE_API_VERSION);
  REQUIRE(strlen(attendre_version_string()) > 0);
  REQUIRE(strcmp(attendre_status_name(ATTENDRE_ERROR_DEVICE_LOST), "device_lost") == 0);
  REQUIRE(strcmp(attendre_status_name((attendre_status)99), "unknown") == 0);

  FAILS(attendre_model_open("/nonexistent/model.gguf", NULL, &model), ATTENDRE_ERROR_IO, "nonexistent");
  REQUIRE(model == NULL);
  FAILS(attendre_model_open(NULL, NULL, &model), ATTENDRE_ERROR_INVALID_ARGUMENT, "path");
  FAILS(attendre_model_open("x.gguf", NULL, NULL), ATTENDRE_ERROR_INVALID_ARGUMENT, "model");
  FAILS(attendre_tokenizer_open("/nonexistent/vocab.gguf", &tokenizer), ATTENDRE_ERROR_IO, "nonexistent");
  FAILS(attendre_tokenizer_encode(NULL, "a", 1, NULL, NULL, &count), ATTENDRE_ERROR_INVALID_ARGUMENT, "tokenizer");
  FAILS(attendre_stack_step(NULL, NULL, 0), ATTENDRE_ERROR_INVALID_ARGUMENT, "stack");
  FAILS(attendre_stack_snapshot(NULL, 0, NULL, NULL, &count), ATTENDRE_ERROR_INVALID_ARGUMENT, "stack");
  FAILS(attendre_layer_step(NULL, NULL), ATTENDRE_ERROR_INVALID_ARGUMENT, "layer");
  FAILS(attendre_kv_memory_insert(NULL, NULL), ATTENDRE_ERROR_INVALID_ARGUMENT, "memory");
  FAILS(attendre_context_create(NULL, NULL), ATTENDRE_ERROR_INVALID_ARGUMENT, "context");
  FAILS(attendre_read_document(NULL, NULL, "q", "c", 1, 4, 0, NULL, &count, NULL), ATTENDRE_ERROR_INVALID_ARGUMENT,
        "stack");
  attendre_context_options_defaults(&options);
  options.validation = 7;
  FAILS(attendre_context_create(&options, &context), ATTENDRE_ERROR_INVALID_ARGUMENT, "validation");
  REQUIRE(context == NULL);
  attendre_context_options_defaults(&options);
  options.device = "no such device anywhere";
  FAILS(attendre_context_create(&options, &context), ATTENDRE_ERROR_UNSUPPORTED, "no such device");
  FAILS(attendre_context_adopt(NULL, &context), ATTENDRE_ERROR_INVALID_ARGUMENT, "external");
  /* Feature switches and the allocator: their defaults, and bits this
   * library does not know refused before any device is made. */
  attendre_context_options_defaults(&options);
  REQUIRE(options.disabled_features == ATTENDRE_FEATURES_DEFAULT);
  REQUIRE(options.allocator == NULL);
  options.disabled_features = ATTENDRE_FEATURE_SUBGROUP_SHUFFLE | (1u << 20);
  FAILS(attendre_context_create(&options, &context), ATTENDRE_ERROR_INVALID_ARGUMENT, "disabled_features");
  REQUIRE(context == NULL);
  FAILS(attendre_context_disabled_features(NULL, NULL), ATTENDRE_ERROR_INVALID_ARGUMENT, "features");
  FAILS(attendre_layer_record(NULL, NULL, NULL, NULL, NULL, 0, 0, NULL, NULL), ATTENDRE_ERROR_INVALID_ARGUMENT,
        "layer");
  FAILS(attendre_layer_submit(NULL, NULL, NULL, NULL), ATTENDRE_ERROR_INVALID_ARGUMENT, "layer");
  FAILS(attendre_ticket_wait(NULL, 0, NULL), ATTENDRE_ERROR_INVALID_ARGUMENT, "ticket");
  FAILS(attendre_stack_record(NULL, NULL, ATTENDRE_RECORD_STEP, 0, NULL, NULL, NULL, NULL, 0, 0),
        ATTENDRE_ERROR_INVALID_ARGUMENT, "stack");
  FAILS(attendre_kv_memory_record_insert(NULL, NULL, NULL, NULL, 0, 0), ATTENDRE_ERROR_INVALID_ARGUMENT, "memory");
  OK(attendre_continuation_point("word word", 9, 9, &point));
  REQUIRE(point == 4);
  REQUIRE(attendre_last_error()[0] == '\0');  /* a success clears the message */

  /* Destroying NULL is allowed. */
  attendre_context_destroy(NULL);
  attendre_stack_destroy(NULL);
  attendre_layer_destroy(NULL);
  attendre_kv_memory_destroy(NULL);
  attendre_model_destroy(NULL);
  attendre_tokenizer_destroy(NULL);
  attendre_ticket_destroy(NULL);
}

/* A stack with random weights: steps, a drain, snapshots and buffers. */
static void check_random_stack(attendre_context* context, FILE* out) {
  attendre_stack_config config;
  attendre_stack* stack = NULL;
  attendre_stack_info info;
  attendre_stack_chunk chunk;
  uint32_t tokens[8];
  int64_t positions[8], emitted[64];
  float hidden[64 * 64];
  size_t count, total = 0, i;
  int pending = 0, step;

  attendre_stack_config_defaults(&config);
  config.seed = 7;
  config.memory.policy = "no_such_policy";
  FAILS(attendre_stack_create(context, &config, &stack), ATTENDRE_ERROR_INVALID_ARGUMENT, "no_such_policy");
  config.memory.policy = "lra_sum";
  config.memory.kv_capacity = 2; /* cannot hold a chunk of 8 under protect_new */
  FAILS(attendre_stack_create(context, &config, &stack), ATTENDRE_ERROR_INFEASIBLE_CONFIG, "");
  REQUIRE(stack == NULL);
  config.memory.kv_capacity = 32;
  OK(attendre_stack_create(context, &config, &stack));
  OK(attendre_stack_info_get(stack, &info));
  REQUIRE(info.chunk == 8 && info.blocks == 2 && info.hidden == 64 && info.drain_positions == 8);

  for (step = 0; step < 4; ++step) {
    for (i = 0; i < 8; ++i) {
      tokens[i] = (uint32_t)((step * 8 + (int)i) * 37 % 256);
      positions[i] = step * 8 + (int64_t)i;
    }
    memset(&chunk, 0, sizeof chunk);
    chunk.rows = 8;
    chunk.tokens = tokens;
    chunk.positions = positions;
    OK(attendre_stack_step(stack, &chunk, ATTENDRE_WANT_HIDDEN));
    count = 64;
    OK(attendre_stack_output_positions(stack, emitted, &count));
    total += count;
  }
  /* Too many rows, a position going back, flags past the known ones. */
  chunk.rows = 9;
  FAILS(attendre_stack_step(stack, &chunk, 0), ATTENDRE_ERROR_INVALID_ARGUMENT, "9 rows");
  chunk.rows = 8;
  FAILS(attendre_stack_step(stack, &chunk, 0), ATTENDRE_ERROR_INVALID_ARGUMENT, "position");
  FAILS(attendre_stack_step(stack, &chunk, 4u), ATTENDRE_ERROR_INVALID_ARGUMENT, "want");
  FAILS(attendre_stack_snapshot(stack, 2, NULL, NULL, &count), ATTENDRE_ERROR_INVALID_ARGUMENT, "block 2");

  OK(attendre_stack_has_pending(stack, &pending));
  REQUIRE(pending == 1);
  OK(attendre_stack_finish(stack, 0, ATTENDRE_WANT_HIDDEN));
  count = 0;
  FAILS(attendre_stack_output_positions(stack, NULL, &count), ATTENDRE_ERROR_BUFFER_TOO_SMALL, "too small");
  REQUIRE(count > 0);
  total += count;
  REQUIRE(total == 32); /* every position left the stack once */
  count = 64 * 64;
  OK(attendre_stack_output_hidden(stack, hidden, &count));
  REQUIRE(count % 64 == 0);
  OK(attendre_stack_has_pending(stack, &pending));
  REQUIRE(pending == 0);
  count = 0;
  FAILS(attendre_stack_snapshot(stack, 1, emitted, NULL, &count), ATTENDRE_ERROR_BUFFER_TOO_SMALL, "32 needed");
  REQUIRE(count == 32);
  print_snapshot(out, "random_stack", stack, 1);

  /* Decoding after the drain: one position through every block. */
  tokens[0] = 5;
  positions[0] = 32;
  chunk.rows = 2;
  FAILS(attendre_stack_decode(stack, &chunk, ATTENDRE_WANT_LOGITS), ATTENDRE_ERROR_INVALID_ARGUMENT, "2 rows");
  chunk.rows = 1;
  OK(attendre_stack_decode(stack, &chunk, ATTENDRE_WANT_LOGITS));
  count = 64;
  OK(attendre_stack_output_positions(stack, emitted, &count));
  REQUIRE(count == 1 && emitted[0] == 32);
  count = 64 * 64;
  OK(attendre_stack_output_logits(stack, hidden, &count));
  REQUIRE(count == 256);
  count = 64;
  OK(attendre_stack_snapshot(stack, 1, emitted, NULL, &count));
  REQUIRE(count == 32 && emitted[count - 1] == 32); /* M = 32: the new key evicted one */
  attendre_stack_destroy(stack);
}

/* A layer of 2 query heads sharing 1 K/V head of 4 dims, chunks of 4. */
static void small_layer(attendre_layer_config* config, uint32_t q_capacity, uint32_t kv_capacity, uint32_t top_k,
                        const char* policy) {
  attendre_layer_config_defaults(config);
  config->heads_q = 2;
  config->heads_kv = 1;
  config->head_dim = 4;
  config->chunk = 4;
  config->memory.q_capacity = q_capacity;
  config->memory.kv_capacity = kv_capacity;
  config->memory.top_k = top_k;
  config->memory.policy = policy;
}

/* One layer and one K/V memory alone. */
static void check_layer_and_memory(attendre_context* context) {
  attendre_layer_config config;
  attendre_layer* layer = NULL;
  attendre_kv_memory* memory = NULL;
  attendre_chunk chunk;
  float q[4 * 2 * 4], k[4 * 1 * 4], v[4 * 1 * 4], outputs[4 * 2 * 4];
  int64_t positions[4], emitted[8], held[16];
  size_t i, count, output_count;
  int pending = 1;

  small_layer(&config, 2, 8, 4, "lfa");
  config.memory.lambda = 0.01;
  for (i = 0; i < 32; ++i) q[i] = (float)((i * 7) % 11) / 11.0f - 0.5f;
  for (i = 0; i < 16; ++i) {
    k[i] = (float)((i * 5) % 13) / 13.0f - 0.5f;
    v[i] = (float)i / 16.0f;
  }
  for (i = 0; i < 4; ++i) positions[i] = (int64_t)i;
  memset(&chunk, 0, sizeof chunk);
  chunk.rows = 4;
  chunk.q = q;
  chunk.k = k;
  chunk.v = v;
  chunk.positions = positions;

  OK(attendre_layer_create(context, &config, &layer));
  OK(attendre_layer_step(layer, &chunk));
  count = 8;
  output_count = 4 * 2 * 4;
  OK(attendre_layer_output(layer, emitted, &count, outputs, &output_count));
  REQUIRE(count == 2 && emitted[0] == 0 && emitted[1] == 1 && output_count == 2 * 2 * 4);
  OK(attendre_layer_drain_step(layer));
  OK(attendre_layer_has_pending(layer, &pending));
  REQUIRE(pending == 0);
  count = 16;
  OK(attendre_layer_snapshot(layer, held, NULL, &count));
  REQUIRE(count == 4);
  attendre_layer_destroy(layer);

  OK(attendre_kv_memory_create(context, &config, 4, &memory));
  OK(attendre_kv_memory_insert(memory, &chunk));
  output_count = 3;
  FAILS(attendre_kv_memory_retrieve(memory, &chunk, outputs, &output_count), ATTENDRE_ERROR_BUFFER_TOO_SMALL, "32");
  REQUIRE(output_count == 32);
  OK(attendre_kv_memory_retrieve(memory, &chunk, outputs, &output_count));
  REQUIRE(output_count == 32);
  for (i = 0; i < 32; ++i) REQUIRE(outputs[i] >= 0.0f && outputs[i] <= 1.0f); /* averages of the values */
  count = 16;
  OK(attendre_kv_memory_snapshot(memory, held, NULL, &count));
  REQUIRE(count == 4);
  attendre_kv_memory_destroy(memory);
}

/* Steps submitted without blocking: two in flight, collected in order,
 * equal to the blocking steps of a twin layer and stack. */
static void check_tickets(attendre_context* context) {
  attendre_layer_config config;
  attendre_layer *blocking = NULL, *pipelined = NULL;
  attendre_stack_config stack_config;
  attendre_stack *stack_blocking = NULL, *stack_pipelined = NULL;
  attendre_ticket* tickets[3] = {NULL, NULL, NULL};
  attendre_chunk chunks[3];
  attendre_stack_chunk stack_chunks[3];
  float q[12 * 8], k[12 * 4], v[12 * 4], want[2 * 4 * 8], got[2 * 4 * 8], want_logits[8 * 256], got_logits[8 * 256];
  int64_t positions[24], want_positions[8], got_positions[8];
  uint32_t tokens[24];
  uint64_t semaphore = 0, value = 0, step = 0;
  size_t i, t, want_count, got_count, want_outputs, got_outputs;
  int ready = 0, finished = 0, timeline = -1;

  small_layer(&config, 3, 6, 3, "lru");
  for (i = 0; i < 12 * 8; ++i) q[i] = (float)((i * 7) % 11) / 11.0f - 0.5f;
  for (i = 0; i < 12 * 4; ++i) {
    k[i] = (float)((i * 5) % 13) / 13.0f - 0.5f;
    v[i] = (float)((i * 3) % 17) / 17.0f;
  }
  for (i = 0; i < 24; ++i) {
    positions[i] = (int64_t)i;
    tokens[i] = (uint32_t)(i * 53 % 256);
  }
  for (t = 0; t < 3; ++t) {
    memset(&chunks[t], 0, sizeof chunks[t]);
    chunks[t].rows = 4;
    chunks[t].q = q + t * 4 * 8;
    chunks[t].k = k + t * 4 * 4;
    chunks[t].v = v + t * 4 * 4;
    chunks[t].positions = positions + t * 4;
  }
  OK(attendre_layer_create(context, &config, &blocking));
  OK(attendre_layer_create(context, &config, &pipelined));
  OK(attendre_context_timeline(context, &timeline));
  OK(attendre_layer_submit(pipelined, &chunks[0], NULL, &tickets[0]));
  for (t = 0; t < 3; ++t) {
    if (t + 1 < 3) OK(attendre_layer_submit(pipelined, &chunks[t + 1], NULL, &tickets[t + 1]));
    OK(attendre_ticket_wait(tickets[t], UINT64_MAX, &finished));
    REQUIRE(finished == 1);
    OK(attendre_ticket_ready(tickets[t], &ready));
    REQUIRE(ready == 1);
    OK(attendre_ticket_step(tickets[t], &step));
    REQUIRE(step == t);
    if (timeline == 1) {
      OK(attendre_ticket_semaphore(tickets[t], &semaphore, &value));
      REQUIRE(semaphore != 0 && value > 0);
    } else {
      FAILS(attendre_ticket_semaphore(tickets[t], &semaphore, &value), ATTENDRE_ERROR_UNSUPPORTED, "timeline");
    }
    FAILS(attendre_layer_result(blocking, tickets[t]), ATTENDRE_ERROR_INVALID_ARGUMENT, "another");
    OK(attendre_layer_result(pipelined, tickets[t]));
    OK(attendre_layer_step(blocking, &chunks[t]));
    want_count = got_count = 8;
    want_outputs = got_outputs = 2 * 4 * 8;
    OK(attendre_layer_output(blocking, want_positions, &want_count, want, &want_outputs));
    OK(attendre_layer_output(pipelined, got_positions, &got_count, got, &got_outputs));
    REQUIRE(got_count == want_count && got_outputs == want_outputs);
    REQUIRE(memcmp(got_positions, want_positions, want_count * sizeof *got_positions) == 0);
    REQUIRE(memcmp(got, want, want_outputs * sizeof *got) == 0); /* same kernels: bit for bit */
  }
  FAILS(attendre_layer_result(pipelined, tickets[2]), ATTENDRE_ERROR_INVALID_ARGUMENT, "collected");
  for (t = 0; t < 3; ++t) attendre_ticket_destroy(tickets[t]);
  attendre_layer_destroy(blocking);
  attendre_layer_destroy(pipelined);

  attendre_stack_config_defaults(&stack_config);
  stack_config.seed = 11;
  OK(attendre_stack_create(context, &stack_config, &stack_blocking));
  OK(attendre_stack_create(context, &stack_config, &stack_pipelined));
  for (t = 0; t < 3; ++t) {
    memset(&stack_chunks[t], 0, sizeof stack_chunks[t]);
    stack_chunks[t].rows = 8;
    stack_chunks[t].tokens = tokens + t * 8;
    stack_chunks[t].positions = positions + t * 8;
  }
  OK(attendre_stack_submit(stack_pipelined, &stack_chunks[0], ATTENDRE_WANT_LOGITS, NULL, &tickets[0]));
  for (t = 0; t < 3; ++t) {
    if (t + 1 < 3)
      OK(attendre_stack_submit(stack_pipelined, &stack_chunks[t + 1], ATTENDRE_WANT_LOGITS, NULL, &tickets[t + 1]));
    OK(attendre_stack_result(stack_pipelined, tickets[t]));
    OK(attendre_stack_step(stack_blocking, &stack_chunks[t], ATTENDRE_WANT_LOGITS));
    want_count = got_count = 8;
    OK(attendre_stack_output_positions(stack_blocking, want_positions, &want_count));
    OK(attendre_stack_output_positions(stack_pipelined, got_positions, &got_count));
    REQUIRE(got_count == want_count && memcmp(got_positions, want_positions, want_count * sizeof *got_positions) == 0);
    want_outputs = got_outputs = 8 * 256;
    OK(attendre_stack_output_logits(stack_blocking, want_logits, &want_outputs));
    OK(attendre_stack_output_logits(stack_pipelined, got_logits, &got_outputs));
    REQUIRE(got_outputs == want_outputs && memcmp(got_logits, want_logits, want_outputs * sizeof *got_logits) == 0);
    attendre_ticket_destroy(tickets[t]);
  }
  attendre_stack_destroy(stack_blocking);
  attendre_stack_destroy(stack_pipelined);
}

static const char* kText = "Lily had a red ball. She played with it in the park every day.";

/* A model: tokenizer, stack, generation and a read; results into `out`. */
static void check_model(attendre_context* context, const char* path, const char* policy, FILE* out) {
  attendre_model* model = NULL;
  attendre_tokenizer* tokenizer = NULL;
  attendre_model_info info;
  attendre_tokenizer_info vocab;
  attendre_memory_setting memory;
  attendre_stack* stack = NULL;
  attendre_stack_chunk chunk;
  attendre_generate_options generate;
  uint32_t ids[256], stops[8], generated[16];
  int64_t positions[8], last_position = -1;
  float* logits;
  char text[1024], answer[512];
  size_t id_count = 256, count, stop_count = 8, i, start, rows, generated_count;
  uint64_t document_tokens = 0;
  int stopped = 0;
  uint32_t block;

  OK(attendre_model_open(path, NULL, &model));
  OK(attendre_model_info_get(model, &info));
  fprintf(out, "architecture %s\n", info.architecture);
  REQUIRE(info.vocab > 0 && info.blocks > 0);
  OK(attendre_model_tokenizer(model, &tokenizer));
  OK(attendre_tokenizer_info_get(tokenizer, &vocab));
  REQUIRE(vocab.size == info.vocab);
  OK(attendre_tokenizer_stop_tokens(tokenizer, stops, &stop_count));

  count = 1;
  FAILS(attendre_tokenizer_encode(tokenizer, kText, strlen(kText), NULL, ids, &count), ATTENDRE_ERROR_BUFFER_TOO_SMALL,
        "needed");
  OK(attendre_tokenizer_encode(tokenizer, kText, strlen(kText), NULL, ids, &id_count));
  fprintf(out, "ids");
  for (i = 0; i < id_count; ++i) fprintf(out, " %u", ids[i]);
  fprintf(out, "\n");
  count = sizeof text;
  OK(attendre_tokenizer_decode(tokenizer, ids, id_count, text, &count));
  REQUIRE(count == strlen(text) + 1);
  fprintf(out, "decoded %s\n", text);
  count = sizeof text;
  OK(attendre_tokenizer_piece(tokenizer, ids[id_count - 1], text, &count));
  FAILS(attendre_tokenizer_piece(tokenizer, vocab.size, text, &count), ATTENDRE_ERROR_INVALID_ARGUMENT, "past");
  FAILS(attendre_tokenizer_encode(tokenizer, "\xff", 1, NULL, ids + 200, &count), ATTENDRE_ERROR_INVALID_ARGUMENT,
        "UTF-8");

  /* S = 8, N = 4, M = 16, K = 8 on every block: the text overflows M. */
  attendre_memory_setting_defaults(&memory);
  memory.chunk = 8;
  memory.q_capacity = 4;
  memory.kv_capacity = 16;
  memory.top_k = 8;
  memory.policy = policy;
  OK(attendre_stack_create_from_model(context, model, &memory, &stack));
  logits = malloc(sizeof(float) * info.vocab * 8 * 8);
  REQUIRE(logits != NULL);
  for (start = 0; start < id_count; start += 8) {
    rows = id_count - start < 8 ? id_count - start : 8;
    for (i = 0; i < rows; ++i) positions[i] = (int64_t)(start + i);
    memset(&chunk, 0, sizeof chunk);
    chunk.rows = (uint32_t)rows;
    chunk.tokens = ids + start;
    chunk.positions = positions;
    OK(attendre_stack_step(stack, &chunk, ATTENDRE_WANT_LOGITS));
  }
  OK(attendre_stack_finish(stack, 0, ATTENDRE_WANT_LOGITS));
  count = 8;
  {
    int64_t emitted[64];
    count = 64;
    OK(attendre_stack_output_positions(stack, emitted, &count));
    REQUIRE(count > 0);
    last_position = emitted[count - 1];
  }
  REQUIRE(last_position == (int64_t)id_count - 1);
  count = (size_t)info.vocab * 64;
  OK(attendre_stack_output_logits(stack, logits, &count));
  fprintf(out, "last_logits");
  for (i = count - info.vocab; i < count; ++i) fprintf(out, " %.9g", logits[i]);
  fprintf(out, "\n");
  for (block = 0; block < info.blocks; ++block) print_snapshot(out, "stack", stack, block);

  attendre_generate_options_defaults(&generate);
  generate.max_tokens = 8;
  generate.stop_tokens = stops;
  generate.stop_count = stop_count;
  generated_count = 4;
  FAILS(attendre_generate_after(stack, logits + count - info.vocab, info.vocab, (int64_t)id_count, &generate, generated,
                                &generated_count, &stopped),
        ATTENDRE_ERROR_BUFFER_TOO_SMALL, "8 needed");
  generated_count = 16;
  FAILS(attendre_generate_after(stack, logits, info.vocab - 1, (int64_t)id_count, &generate, generated, &generated_count,
                                &stopped),
        ATTENDRE_ERROR_INVALID_ARGUMENT, "");
  OK(attendre_generate_after(stack, logits + count - info.vocab, info.vocab, (int64_t)id_count, &generate, generated,
                             &generated_count, &stopped));
  fprintf(out, "generated");
  for (i = 0; i < generated_count; ++i) fprintf(out, " %u", generated[i]);
  fprintf(out, "\nstopped %d\n", stopped);
  free(logits);
  attendre_stack_destroy(stack);

  /* Reading a document with a question on a fresh stack. */
  OK(attendre_stack_create_from_model(context, model, &memory, &stack));
  count = 1;
  {
    attendre_status status = attendre_read_document(stack, model, "What color was the ball?", kText, strlen(kText), 6, 0,
                                                    answer, &count, &document_tokens);
    REQUIRE(status == ATTENDRE_OK || status == ATTENDRE_ERROR_BUFFER_TOO_SMALL);
    REQUIRE(count >= 1);
  }
  count = sizeof answer;
  OK(attendre_stack_answer(stack, answer, &count));
  fprintf(out, "answer %s\n", answer);
  fprintf(out, "document_tokens %llu\n", (unsigned long long)document_tokens);
  for (block = 0; block < info.blocks; ++block) print_snapshot(out, "read", stack, block);
  attendre_stack_destroy(stack);

  attendre_tokenizer_destroy(tokenizer);
  attendre_model_destroy(model); /* the tokenizer handle did not need it */
}

int main(int argc, char** argv) {
  attendre_context* context = NULL;
  FILE* out;
  char name[256];
  size_t count = sizeof name;

  if (argc != 2 && argc != 4) {
    fprintf(stderr, "usage: %s OUT [MODEL.gguf POLICY]\n", argv[0]);
    return 2;
  }
  out = fopen(argv[1], "w");
  if (!out) {
    fprintf(stderr, "cannot write %s\n", argv[1]);
    return 2;
  }
  check_errors_without_device();
  OK(attendre_context_create(NULL, &context)); /* validation as ATTENDRE_VALIDATION says */
  OK(attendre_context_device_name(context, name, &count));
  fprintf(out, "device %s\n", name);
  check_random_stack(context, out);
  check_layer_and_memory(context);
  check_tickets(context);
  if (argc == 4) check_model(context, argv[2], argv[3], out);
  check_validation(context);
  attendre_context_destroy(context);
  fclose(out);
  if (failures > 0) {
    fprintf(stderr, "%d error paths answered wrongly\n", failures);
    return 1;
  }
  printf("capi: ok\n");
  return 0;
}
