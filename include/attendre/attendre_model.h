/* attendre's C API, its language-model half: models (GGUF), tokenizers,
 * the transformer stack and generation, including the reader's read/answer
 * loop. Part of <attendre/attendre.h>, which includes it (and which it
 * includes for the status codes, the context, memory settings, tickets and
 * buffer ranges); the conventions stated there hold here. */
#ifndef ATTENDRE_ATTENDRE_MODEL_H
#define ATTENDRE_ATTENDRE_MODEL_H

#include <attendre/attendre.h>

#if defined(__clang__)
/* The nullability marks are a clang extension: -pedantic builds keep quiet about them. */
#pragma clang diagnostic push
#pragma clang diagnostic ignored "-Wnullability-extension"
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------
 * Models (GGUF files: llama-family and qwen2 architectures). */
typedef struct attendre_model attendre_model;

typedef struct attendre_model_options {
  int f16_weights;  /* store the file's F32 matrices as f16 on the device */
} attendre_model_options;

typedef struct attendre_model_info {
  const char* ATTENDRE_NOT_NULL architecture; /* general.architecture */
  const char* ATTENDRE_NOT_NULL name;         /* general.name, "" when absent */
  uint32_t context_length;   /* the length it was trained on */
  uint32_t blocks;
  uint32_t hidden;
  uint32_t vocab;
  uint64_t parameters;
  uint64_t tensor_bytes;
} attendre_model_info;

/* options NULL: the defaults. */
ATTENDRE_C_API attendre_status attendre_model_open(const char* ATTENDRE_NOT_NULL path,
                                                   const attendre_model_options* ATTENDRE_NULLABLE options,
                                                   attendre_model* ATTENDRE_NULLABLE* ATTENDRE_NOT_NULL model);
ATTENDRE_C_API void attendre_model_destroy(attendre_model* ATTENDRE_NULLABLE model);
/* The strings live as long as the model. */
ATTENDRE_C_API attendre_status attendre_model_info_get(const attendre_model* ATTENDRE_NOT_NULL model,
                                                       attendre_model_info* ATTENDRE_NOT_NULL info);
/* The model's default memory plan: chunks of 64 and the full trained context. */
ATTENDRE_C_API attendre_status attendre_model_default_memory(const attendre_model* ATTENDRE_NOT_NULL model,
                                                             attendre_memory_setting* ATTENDRE_NOT_NULL setting);

/* ------------------------------------------------------------------------
 * Tokenizers: text to token ids and back, as llama.cpp does it. */
typedef struct attendre_tokenizer attendre_tokenizer;

/* The vocabulary of a GGUF file (a model or a vocabulary-only file). */
ATTENDRE_C_API attendre_status attendre_tokenizer_open(const char* ATTENDRE_NOT_NULL path,
                                                       attendre_tokenizer* ATTENDRE_NULLABLE* ATTENDRE_NOT_NULL tokenizer);
/* The model's tokenizer, as a handle of its own (it may outlive the model). */
ATTENDRE_C_API attendre_status attendre_model_tokenizer(const attendre_model* ATTENDRE_NOT_NULL model,
                                                        attendre_tokenizer* ATTENDRE_NULLABLE* ATTENDRE_NOT_NULL tokenizer);
ATTENDRE_C_API void attendre_tokenizer_destroy(attendre_tokenizer* ATTENDRE_NULLABLE tokenizer);

typedef struct attendre_encode_options {
  int add_bos;        /* -1: as the vocabulary says; 0: no; 1: yes */
  int parse_special;  /* control tokens' text ("<s>") becomes their ids */
  int continuation;   /* the text continues a document: no BOS, no space prefix */
  int more_follows;   /* more of the document follows: no EOS */
} attendre_encode_options;

ATTENDRE_C_API void attendre_encode_options_defaults(attendre_encode_options* ATTENDRE_NOT_NULL options);
/* The ids of `length` bytes of UTF-8 `text`; options NULL: the defaults. */
ATTENDRE_C_API attendre_status attendre_tokenizer_encode(const attendre_tokenizer* ATTENDRE_NOT_NULL tokenizer,
                                                         const char* ATTENDRE_NULLABLE text, size_t length,
                                                         const attendre_encode_options* ATTENDRE_NULLABLE options,
                                                         uint32_t* ATTENDRE_NULLABLE ids,
                                                         size_t* ATTENDRE_NOT_NULL count);
/* The text of `ids` (control tokens render as nothing). */
ATTENDRE_C_API attendre_status attendre_tokenizer_decode(const attendre_tokenizer* ATTENDRE_NOT_NULL tokenizer,
                                                         const uint32_t* ATTENDRE_NULLABLE ids, size_t id_count,
                                                         char* ATTENDRE_NULLABLE text,
                                                         size_t* ATTENDRE_NOT_NULL count);
/* The bytes token `id` stands for on its own. */
ATTENDRE_C_API attendre_status attendre_tokenizer_piece(const attendre_tokenizer* ATTENDRE_NOT_NULL tokenizer,
                                                        uint32_t id, char* ATTENDRE_NULLABLE text,
                                                        size_t* ATTENDRE_NOT_NULL count);

typedef struct attendre_tokenizer_info {
  uint32_t size;  /* number of tokens */
  int64_t bos;    /* -1: none */
  int64_t eos;    /* -1: none */
} attendre_tokenizer_info;

ATTENDRE_C_API attendre_status attendre_tokenizer_info_get(const attendre_tokenizer* ATTENDRE_NOT_NULL tokenizer,
                                                           attendre_tokenizer_info* ATTENDRE_NOT_NULL info);
/* The ids that end a generation: EOS and the end-of-turn token. */
ATTENDRE_C_API attendre_status attendre_tokenizer_stop_tokens(const attendre_tokenizer* ATTENDRE_NOT_NULL tokenizer,
                                                              uint32_t* ATTENDRE_NULLABLE ids,
                                                              size_t* ATTENDRE_NOT_NULL count);
/* Where `text` may be cut at or before `limit` so that its pieces, encoded
 * one after the other (all but the first as continuations), give the ids
 * of the whole; 0 when there is no such place. */
ATTENDRE_C_API attendre_status attendre_continuation_point(const char* ATTENDRE_NULLABLE text, size_t length,
                                                           size_t limit, size_t* ATTENDRE_NOT_NULL point);

/* ------------------------------------------------------------------------
 * Stacks (spec 4): L transformer blocks whose self-attention is an
 * ATTENDRE layer, on the device. */
typedef struct attendre_stack attendre_stack;

/* A stack with seeded random weights (for tests and benchmarks): llama
 * blocks (RMSNorm, RoPE, SiLU-gated FFN) of one shape. */
typedef struct attendre_stack_config {
  uint32_t hidden;
  uint32_t vocab;   /* 0: the caller feeds embeddings and gets no logits */
  uint32_t blocks;
  uint32_t heads_q, heads_kv, head_dim;
  uint32_t ffn;     /* 0: no FFN sublayer */
  attendre_memory_setting memory;  /* chunk, N, M (> 0), K, policy ... of every block */
  uint64_t seed;
} attendre_stack_config;

ATTENDRE_C_API void attendre_stack_config_defaults(attendre_stack_config* ATTENDRE_NOT_NULL config);
ATTENDRE_C_API attendre_status attendre_stack_create(attendre_context* ATTENDRE_NOT_NULL context,
                                                     const attendre_stack_config* ATTENDRE_NOT_NULL config,
                                                     attendre_stack* ATTENDRE_NULLABLE* ATTENDRE_NOT_NULL stack);
/* The model's stack under `memory` (NULL: the model's default plan). The
 * weights are on the device once this returns: the model may then go. */
ATTENDRE_C_API attendre_status attendre_stack_create_from_model(attendre_context* ATTENDRE_NOT_NULL context,
                                                                attendre_model* ATTENDRE_NOT_NULL model,
                                                                const attendre_memory_setting* ATTENDRE_NULLABLE memory,
                                                                attendre_stack* ATTENDRE_NULLABLE* ATTENDRE_NOT_NULL stack);
ATTENDRE_C_API void attendre_stack_destroy(attendre_stack* ATTENDRE_NULLABLE stack);

typedef struct attendre_stack_info {
  uint32_t hidden, vocab, chunk, blocks;
  uint64_t drain_positions;  /* padding a drain needs: the sum of the blocks' N */
  uint64_t device_bytes;     /* device memory the stack holds */
} attendre_stack_info;

ATTENDRE_C_API attendre_status attendre_stack_info_get(const attendre_stack* ATTENDRE_NOT_NULL stack,
                                                       attendre_stack_info* ATTENDRE_NOT_NULL info);

/* One chunk of at most S positions: token ids (vocab > 0) or embeddings
 * (rows * hidden floats); valid NULL: all valid. */
typedef struct attendre_stack_chunk {
  uint32_t rows;
  const uint32_t* ATTENDRE_NULLABLE tokens;
  const float* ATTENDRE_NULLABLE embeddings;
  const int64_t* ATTENDRE_NULLABLE positions;
  const uint8_t* ATTENDRE_NULLABLE valid;
} attendre_stack_chunk;

/* What a step reads back (flags): final hidden states, logits. */
#define ATTENDRE_WANT_HIDDEN 1u
#define ATTENDRE_WANT_LOGITS 2u

ATTENDRE_C_API attendre_status attendre_stack_step(attendre_stack* ATTENDRE_NOT_NULL stack,
                                                   const attendre_stack_chunk* ATTENDRE_NOT_NULL chunk,
                                                   uint32_t want);
/* Drains with padding chunks (flush 0) or flushes block by block (flush 1,
 * needs memory.flush_capable) until nothing waits; then decode may run. */
ATTENDRE_C_API attendre_status attendre_stack_finish(attendre_stack* ATTENDRE_NOT_NULL stack, int flush,
                                                     uint32_t want);
/* After finish: one position through every block, causal. */
ATTENDRE_C_API attendre_status attendre_stack_decode(attendre_stack* ATTENDRE_NOT_NULL stack,
                                                     const attendre_stack_chunk* ATTENDRE_NOT_NULL one,
                                                     uint32_t want);
ATTENDRE_C_API attendre_status attendre_stack_has_pending(const attendre_stack* ATTENDRE_NOT_NULL stack,
                                                          int* ATTENDRE_NOT_NULL pending);
/* The last step's, finish's or decode's output: positions that left the
 * last block (in order), their hidden states [positions][hidden] and logits
 * [positions][vocab] as requested. */
ATTENDRE_C_API attendre_status attendre_stack_output_positions(const attendre_stack* ATTENDRE_NOT_NULL stack,
                                                               int64_t* ATTENDRE_NULLABLE positions,
                                                               size_t* ATTENDRE_NOT_NULL count);
ATTENDRE_C_API attendre_status attendre_stack_output_hidden(const attendre_stack* ATTENDRE_NOT_NULL stack,
                                                            float* ATTENDRE_NULLABLE hidden,
                                                            size_t* ATTENDRE_NOT_NULL count);
ATTENDRE_C_API attendre_status attendre_stack_output_logits(const attendre_stack* ATTENDRE_NOT_NULL stack,
                                                            float* ATTENDRE_NULLABLE logits,
                                                            size_t* ATTENDRE_NOT_NULL count);
/* attendre_stack_step without blocking (options NULL: none); the result
 * is collected with attendre_stack_result and read with the getters above. */
ATTENDRE_C_API attendre_status attendre_stack_submit(attendre_stack* ATTENDRE_NOT_NULL stack,
                                                     const attendre_stack_chunk* ATTENDRE_NOT_NULL chunk,
                                                     uint32_t want,
                                                     const attendre_submit_options* ATTENDRE_NULLABLE options,
                                                     attendre_ticket* ATTENDRE_NULLABLE* ATTENDRE_NOT_NULL ticket);
ATTENDRE_C_API attendre_status attendre_stack_result(attendre_stack* ATTENDRE_NOT_NULL stack,
                                                     const attendre_ticket* ATTENDRE_NOT_NULL ticket);

/* What attendre_stack_record appends. */
typedef enum attendre_record_kind {
  ATTENDRE_RECORD_STEP = 0,   /* a step of `chunk` (no rows: a drain step) */
  ATTENDRE_RECORD_DECODE = 1, /* after finish: one position */
  ATTENDRE_RECORD_FLUSH = 2   /* block `block`'s waiting queries retrieve at once (no chunk) */
} attendre_record_kind;

/* Embedding: one stack step appended to the application's
 * `command_buffer`, with attendre_layer_record's contract. Positions and
 * valid flags come from `chunk`; the rows from its tokens / embeddings or,
 * with `input` set, from the application's buffer (rows uint32 ids with a
 * vocabulary, else rows * hidden floats). `hidden` and `logits` (NULL:
 * none) receive the emitted rows' final hidden states and logits, packed
 * (room for S rows; a flush: for the largest of S and the blocks' N).
 * The emitted positions are then read with attendre_stack_output_positions.
 * Drain with steps of no rows, or flush every block, until nothing is
 * pending, then attendre_stack_finish (which has nothing left to run)
 * before decode steps. */
ATTENDRE_C_API attendre_status attendre_stack_record(attendre_stack* ATTENDRE_NOT_NULL stack,
                                                     void* ATTENDRE_NOT_NULL command_buffer, int kind,
                                                     uint32_t block,
                                                     const attendre_stack_chunk* ATTENDRE_NULLABLE chunk,
                                                     const attendre_buffer_range* ATTENDRE_NULLABLE input,
                                                     const attendre_buffer_range* ATTENDRE_NULLABLE hidden,
                                                     const attendre_buffer_range* ATTENDRE_NULLABLE logits,
                                                     uint32_t consumer_stages, uint32_t consumer_access);

/* Block `block`'s retained positions (ascending) and scores now. */
ATTENDRE_C_API attendre_status attendre_stack_snapshot(attendre_stack* ATTENDRE_NOT_NULL stack, uint32_t block,
                                                       int64_t* ATTENDRE_NULLABLE positions,
                                                       double* ATTENDRE_NULLABLE scores,
                                                       size_t* ATTENDRE_NOT_NULL count);

/* ------------------------------------------------------------------------
 * Generation: the prompt streams through the stack, then tokens are
 * sampled from the logits and decoded one by one. */
typedef struct attendre_generate_options {
  uint32_t max_tokens;          /* budget of generated tokens (128) */
  double temperature;           /* 0: greedy */
  double top_p;                 /* nucleus sampling, in (0, 1] */
  uint64_t seed;
  const uint32_t* ATTENDRE_NULLABLE stop_tokens; /* generation ends on one (not kept); NULL with stop_count 0: none */
  size_t stop_count;
  int flush;                    /* finish the prompt by flushing instead of draining */
} attendre_generate_options;

ATTENDRE_C_API void attendre_generate_options_defaults(attendre_generate_options* ATTENDRE_NOT_NULL options);
/* Reads `prompt` at positions 0, 1, ... and generates. `tokens` needs room
 * for max_tokens ids (checked first); *stopped (may be NULL): a stop token
 * ended it. */
ATTENDRE_C_API attendre_status attendre_generate(attendre_stack* ATTENDRE_NOT_NULL stack,
                                                 const uint32_t* ATTENDRE_NULLABLE prompt, size_t prompt_count,
                                                 const attendre_generate_options* ATTENDRE_NULLABLE options,
                                                 uint32_t* ATTENDRE_NULLABLE tokens, size_t* ATTENDRE_NOT_NULL count,
                                                 int* ATTENDRE_NULLABLE stopped);
/* Generation after a prompt the caller streamed and finished: the last
 * prompt position's `vocab` logits, the first generated token's position. */
ATTENDRE_C_API attendre_status attendre_generate_after(attendre_stack* ATTENDRE_NOT_NULL stack,
                                                       const float* ATTENDRE_NULLABLE last_logits, size_t vocab,
                                                       int64_t next_position,
                                                       const attendre_generate_options* ATTENDRE_NULLABLE options,
                                                       uint32_t* ATTENDRE_NULLABLE tokens,
                                                       size_t* ATTENDRE_NOT_NULL count,
                                                       int* ATTENDRE_NULLABLE stopped);

/* Reads "Question: {question}\n\nContext: {context}\n\nAnswer:" through a
 * fresh stack of `model` (encoded part by part, stepped in chunks of S),
 * finishes it (flush 1: flushing) and answers greedily with at most
 * answer_tokens tokens: `answer` receives the first line of the generated
 * text. On ATTENDRE_ERROR_BUFFER_TOO_SMALL the read is done: the answer is
 * kept and attendre_stack_answer returns it, and *document_tokens is set. The stack's snapshots then show
 * what each block retained; *document_tokens (may be NULL): the positions
 * the document took. */
ATTENDRE_C_API attendre_status attendre_read_document(attendre_stack* ATTENDRE_NOT_NULL stack,
                                                      const attendre_model* ATTENDRE_NOT_NULL model,
                                                      const char* ATTENDRE_NOT_NULL question,
                                                      const char* ATTENDRE_NULLABLE context, size_t context_length,
                                                      uint32_t answer_tokens, int flush,
                                                      char* ATTENDRE_NULLABLE answer,
                                                      size_t* ATTENDRE_NOT_NULL count,
                                                      uint64_t* ATTENDRE_NULLABLE document_tokens);
/* The answer of the stack's last attendre_read_document. */
ATTENDRE_C_API attendre_status attendre_stack_answer(const attendre_stack* ATTENDRE_NOT_NULL stack,
                                                     char* ATTENDRE_NULLABLE answer, size_t* ATTENDRE_NOT_NULL count);

#ifdef __cplusplus
}
#endif

#if defined(__clang__)
#pragma clang diagnostic pop
#endif

#endif /* ATTENDRE_ATTENDRE_MODEL_H */
