/* attendre's C API: the bounded K/V memory transformer stack on Vulkan,
 * for C (C11) and any language with a C foreign-function interface.
 *
 * Stability: ATTENDRE_API_VERSION counts incompatible changes of this
 * header; attendre_version() is the version of the library at run time, and
 * a program should check that the two agree. No C++ type crosses this
 * boundary; every object is an opaque handle created by attendre_*_create
 * (or _open, _adopt) and released by the matching attendre_*_destroy, which
 * accepts NULL. Option structs are filled with defaults by their
 * attendre_*_defaults() function before the caller changes fields, so that a
 * field added later keeps its default in old code that is rebuilt.
 *
 * Lifetimes: destroying a handle twice, or using it after its destroy, is
 * undefined behaviour (as freeing memory twice is; the library cannot tell
 * a destroyed handle from a live one). The order of destruction:
 *   - a context after every kv_memory, layer and stack created on it
 *     (destroying it first is undefined behaviour);
 *   - a model whenever the caller likes: a stack created from it holds its
 *     weights on the device, and its tokenizer handle is a copy, so both
 *     outlive it; attendre_read_document needs the model during the call;
 *   - a ticket before or after the layer or stack that made it (it owns
 *     nothing of theirs), though no call but attendre_ticket_destroy may
 *     take it once they are gone;
 *   - a layer, kv_memory or stack whenever its own steps are done or not:
 *     its destroy waits for the steps it submitted; steps recorded into the
 *     application's command buffer must have completed first (they use its
 *     buffers; the application owns that submission).
 *
 * Errors: every function that can fail returns an attendre_status
 * (ATTENDRE_OK = 0). attendre_last_error() is the one-line message of the
 * calling thread's last call ("" after a success). No function throws or
 * aborts on bad input: NULL handles and pointers, sizes out of range, bad
 * files and exhausted memory all come back as codes. What a failed call
 * leaves in its outputs: a function that makes a handle (_create, _open,
 * _adopt, attendre_model_tokenizer, the submits' tickets) sets it to NULL
 * whenever the pointer to it is not NULL; every other output the caller
 * passes (structs, scalars, buffers and their counts) is written only on
 * success, except *count on ATTENDRE_ERROR_BUFFER_TOO_SMALL (below) and
 * the two calls that say otherwise (attendre_read_document,
 * attendre_context_take_validation_messages). A layer or stack step,
 * drain, flush, finish, decode, record or result that fails otherwise than
 * with BUFFER_TOO_SMALL leaves its handle with no results: the output
 * getters then give 0 elements.
 *
 * Output buffers (one scheme everywhere): the caller passes a buffer and a
 * size_t* count holding its capacity in elements (bytes for text). On
 * success *count is set to the elements written. When the buffer is too
 * small (or NULL), the call returns ATTENDRE_ERROR_BUFFER_TOO_SMALL with
 * *count set to the capacity needed, and changes nothing else: ask with
 * count 0, allocate, ask again. Text is UTF-8 and NUL-terminated; its count
 * includes the NUL. Calls that change state (step, finish, decode,
 * generate) check their buffers before doing anything; results whose size
 * is only known afterwards (a stack step's outputs) stay in the handle
 * until its next such call and are read with the getters below. Strings
 * the library returns as const char* live as long as the handle they came
 * from (or forever, for the static ones).
 *
 * Threads: a handle is used by one thread at a time; different handles on
 * different contexts may run concurrently. A context must outlive every
 * handle created on it.
 */
#ifndef ATTENDRE_ATTENDRE_H
#define ATTENDRE_ATTENDRE_H

#include <stddef.h>
#include <stdint.h>

/* Exported symbols: only the functions of this header leave the shared
 * library (which is built with hidden visibility). */
#if defined(_WIN32)
#if defined(ATTENDRE_C_API_BUILD)
#define ATTENDRE_C_API __declspec(dllexport)
#else
#define ATTENDRE_C_API __declspec(dllimport)
#endif
#elif defined(__GNUC__) || defined(__clang__)
#define ATTENDRE_C_API __attribute__((visibility("default")))
#else
#define ATTENDRE_C_API
#endif

/* Nullability of every pointer, marked as VMA marks it; clang checks calls
 * against it (and -Wnullability-completeness that nothing is unmarked), other
 * compilers see nothing:
 *   ATTENDRE_NOT_NULL  the call needs it: NULL still comes back as
 *                      ATTENDRE_ERROR_INVALID_ARGUMENT naming the parameter
 *                      (the void *_defaults functions then do nothing),
 *                      never a crash;
 *   ATTENDRE_NULLABLE  NULL has the meaning its comment gives: options
 *                      NULL the defaults, an output buffer NULL a size query
 *                      (with its count), an input array NULL with length 0,
 *                      a destroy of NULL nothing.
 * A handle output (T** out) is ATTENDRE_NOT_NULL itself and receives a
 * handle or NULL (set to NULL when the call fails). */
#if defined(__clang__) && !defined(ATTENDRE_NO_NULLABILITY)
#define ATTENDRE_NULLABLE _Nullable
#define ATTENDRE_NOT_NULL _Nonnull
#else
#define ATTENDRE_NULLABLE
#define ATTENDRE_NOT_NULL
#endif

#if defined(__clang__)
/* The nullability marks are a clang extension: -pedantic builds keep quiet about them. */
#pragma clang diagnostic push
#pragma clang diagnostic ignored "-Wnullability-extension"
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* History (a struct that grows changes the layout a compiled program
 * passes, so it counts as incompatible even where rebuilt code keeps its
 * defaults):
 *   1  first release of this header;
 *   2  structs grew (trailing fields, defaults 0 or NULL):
 *      attendre_context_options (disabled_features, allocator),
 *      attendre_external_device (options, timeline_semaphore_enabled),
 *      attendre_memory_setting (fp16_memory); added the record, ticket and
 *      submit functions;
 *   3  structs grew (trailing fields, defaults 0): attendre_memory_setting
 *      (fp16_activations), attendre_context_options (max_groups_per_dispatch);
 *   4  attendre_context_options grew (half_loads, default -1);
 *   5  attendre_context_options grew (byte_loads and half_math, default -1),
 *      attendre_external_device (storage_8bit_enabled, float16_enabled);
 *   6  attendre_memory_setting grew (n_recent, default 0). */
#define ATTENDRE_API_VERSION 6

/* ATTENDRE_API_VERSION of the library linked at run time. */
ATTENDRE_C_API uint32_t attendre_version(void);
/* The library's release, "MAJOR.MINOR.PATCH" (static). */
ATTENDRE_C_API const char* ATTENDRE_NOT_NULL attendre_version_string(void);

/* ------------------------------------------------------------------------
 * Status codes: one per attendre::ErrorCode, then the C boundary's own. */
typedef enum attendre_status {
  ATTENDRE_OK = 0,
  ATTENDRE_ERROR_INVALID_ARGUMENT = 1,     /* a value outside its domain, a NULL handle or pointer */
  ATTENDRE_ERROR_INFEASIBLE_CONFIG = 2,    /* a configuration whose eviction cannot be satisfied */
  ATTENDRE_ERROR_UNSUPPORTED = 3,          /* the device or the file needs what attendre lacks */
  ATTENDRE_ERROR_OUT_OF_DEVICE_MEMORY = 4,
  ATTENDRE_ERROR_OUT_OF_HOST_MEMORY = 5,   /* also any allocation failure on the host */
  ATTENDRE_ERROR_DEVICE_LOST = 6,          /* the context is unusable afterwards */
  ATTENDRE_ERROR_VULKAN = 7,               /* any other Vulkan failure */
  ATTENDRE_ERROR_IO = 8,                   /* a file could not be opened or read */
  ATTENDRE_ERROR_MALFORMED_INPUT = 9,      /* a file whose content breaks its format */
  ATTENDRE_ERROR_NUMERICAL = 10,           /* the device computed NaN or infinity */
  ATTENDRE_ERROR_BUFFER_TOO_SMALL = 11,    /* *count now holds the capacity needed */
  ATTENDRE_ERROR_INTERNAL = 12             /* an unexpected failure inside attendre (a bug) */
} attendre_status;

/* "ok", "invalid_argument", ... (static; "unknown" for other values). */
ATTENDRE_C_API const char* ATTENDRE_NOT_NULL attendre_status_name(attendre_status status);
/* The calling thread's last message: "" after a success. Valid until the
 * thread's next attendre call. */
ATTENDRE_C_API const char* ATTENDRE_NOT_NULL attendre_last_error(void);

/* ------------------------------------------------------------------------
 * Context: a Vulkan device, created here or adopted from the application. */
typedef struct attendre_context attendre_context;

typedef enum attendre_validation {
  ATTENDRE_VALIDATION_DEFAULT = -1,  /* read ATTENDRE_VALIDATION from the environment */
  ATTENDRE_VALIDATION_OFF = 0,
  ATTENDRE_VALIDATION_CORE = 1,      /* the Khronos layer's API checks */
  ATTENDRE_VALIDATION_SYNC = 2,      /* core + synchronization validation */
  ATTENDRE_VALIDATION_GPU = 3        /* sync + GPU-assisted shader checks (slow) */
} attendre_validation;

typedef enum attendre_kernels {
  ATTENDRE_KERNELS_DEFAULT = -1,  /* ATTENDRE_KERNELS, else direct on CPU devices, tiled elsewhere */
  ATTENDRE_KERNELS_TILED = 0,
  ATTENDRE_KERNELS_DIRECT = 1
} attendre_kernels;

/* Optional device features attendre uses when present, as bits of
 * disabled_features: a disabled one is treated as absent and its fallback
 * runs (so that the fallback is tested on any device). */
#define ATTENDRE_FEATURE_STORAGE_16BIT (1u << 0)          /* "16bit" */
#define ATTENDRE_FEATURE_FLOAT16 (1u << 1)                /* "float16" */
#define ATTENDRE_FEATURE_STORAGE_8BIT (1u << 2)           /* "8bit" */
#define ATTENDRE_FEATURE_SUBGROUP_ARITHMETIC (1u << 3)    /* "arithmetic" */
#define ATTENDRE_FEATURE_SUBGROUP_BALLOT (1u << 4)        /* "ballot" */
#define ATTENDRE_FEATURE_SUBGROUP_SHUFFLE (1u << 5)       /* "shuffle" */
#define ATTENDRE_FEATURE_SUBGROUP_SIZE_CONTROL (1u << 6)  /* "size_control" */
#define ATTENDRE_FEATURE_LARGE_WORKGROUPS (1u << 7)       /* "large_workgroups" */
#define ATTENDRE_FEATURE_TIMELINE (1u << 8)               /* "timeline": tickets chain on timeline semaphores */
#define ATTENDRE_FEATURE_TEXEL_BUFFERS (1u << 9)          /* "texel": direct matmuls read weights as texel buffers */
#define ATTENDRE_FEATURES_ALL 0x3ffu
/* disabled_features: read ATTENDRE_DISABLE ("shuffle,16bit") from the environment. */
#define ATTENDRE_FEATURES_DEFAULT 0xffffffffu

typedef struct attendre_context_options {
  const char* ATTENDRE_NULLABLE device; /* index or name substring; NULL or "": ATTENDRE_DEVICE, else the best */
  int validation;                 /* attendre_validation */
  int portable_limits;            /* -1: ATTENDRE_PORTABLE_LIMITS; 0: off; 1: the Vulkan minimums */
  int kernels;                    /* attendre_kernels */
  uint32_t fence_timeout_ms;      /* a longer wait reports the device lost */
  uint32_t disabled_features;     /* ATTENDRE_FEATURE_* bits, or ATTENDRE_FEATURES_DEFAULT; others: an error */
  /* The application's host allocator (a const VkAllocationCallbacks*), given
   * to every Vulkan object attendre creates; NULL: the driver's. It must
   * outlive the context. */
  const void* ATTENDRE_NULLABLE allocator;
  /* Workgroups per dispatch before a grid is cut into pieces (the watchdog
   * bound, README "Watchdogs"); 0: the device's default, the portable
   * limits' 32, or with portable_limits -1 ATTENDRE_MAX_GROUPS_PER_DISPATCH.
   * A nonzero value needs portable_limits 0 or 1 (an explicit choice of
   * limits, which reads no environment). */
  uint32_t max_groups_per_dispatch;
  /* fp16 weights, memories and activations: 1 reads them by 16-bit loads
   * wherever the device has 16-bit storage; 0 lets the driver's quirks
   * choose unpacked 32-bit words where those are faster (lavapipe); -1
   * reads ATTENDRE_HALF_LOADS (0 or 1). For words everywhere, disable
   * ATTENDRE_FEATURE_STORAGE_16BIT. */
  int half_loads;
  /* Q8_0 weights: 1 reads their quants by int8 loads wherever the device
   * has 8-bit storage; 0 lets the driver's quirks choose 32-bit words where
   * those are faster (lavapipe); -1 reads ATTENDRE_BYTE_LOADS (0 or 1). For
   * words everywhere, disable ATTENDRE_FEATURE_STORAGE_8BIT. */
  int byte_loads;
  /* fp16 activations x fp16 weights: 1 multiplies them in fp16 (sums in
   * fp32) wherever shaderFloat16 and 16-bit loads are in use; 0 lets the
   * driver's quirks keep fp32 math where fp16 math is emulated (lavapipe);
   * -1 reads ATTENDRE_HALF_MATH (0 or 1). For fp32 math everywhere, disable
   * ATTENDRE_FEATURE_FLOAT16. */
  int half_math;
} attendre_context_options;

ATTENDRE_C_API void attendre_context_options_defaults(attendre_context_options* ATTENDRE_NOT_NULL options);
/* options NULL: the defaults. */
ATTENDRE_C_API attendre_status attendre_context_create(const attendre_context_options* ATTENDRE_NULLABLE options,
                                                       attendre_context* ATTENDRE_NULLABLE* ATTENDRE_NOT_NULL context);

/* Handles of a device the application created; attendre never destroys
 * them. The Vulkan handles are passed as pointers (VkInstance,
 * VkPhysicalDevice, VkDevice and VkQueue are dispatchable handles). */
typedef struct attendre_external_device {
  void* ATTENDRE_NOT_NULL instance;         /* VkInstance */
  void* ATTENDRE_NOT_NULL physical_device;  /* VkPhysicalDevice */
  void* ATTENDRE_NOT_NULL device;           /* VkDevice */
  void* ATTENDRE_NOT_NULL queue;            /* VkQueue, supporting compute */
  uint32_t queue_family;
  int storage_16bit_enabled;  /* the device was created with storageBuffer16BitAccess */
  /* PFN_vkGetInstanceProcAddr of the application's loader; NULL: attendre
   * opens libvulkan itself. */
  void (*ATTENDRE_NULLABLE (*ATTENDRE_NULLABLE get_instance_proc_addr)(void* ATTENDRE_NULLABLE instance,
                                                                     const char* ATTENDRE_NOT_NULL name))(void);
  /* NULL: the defaults. Of the options, kernels, disabled_features,
   * allocator (for the objects attendre creates, never the adopted ones) and
   * portable_limits (1: the Vulkan minimums; else the device's own) apply;
   * device, validation and fence_timeout_ms must keep their defaults, since
   * the application's instance and device decide them. A pointer rather
   * than fields, so that a zero-initialized struct keeps every default. */
  const attendre_context_options* ATTENDRE_NULLABLE options;
  /* The device was created with timelineSemaphore (Vulkan 1.2 core or
   * VK_KHR_timeline_semaphore): tickets then carry a timeline semaphore. */
  int timeline_semaphore_enabled;
  /* The device was created with storageBuffer8BitAccess (Q8_0 quants then
   * read by int8 loads) and with shaderFloat16 (fp16 activations x fp16
   * weights then multiplied in fp16); 0: treated as absent. */
  int storage_8bit_enabled;
  int float16_enabled;
} attendre_external_device;

ATTENDRE_C_API attendre_status attendre_context_adopt(const attendre_external_device* ATTENDRE_NOT_NULL external,
                                                      attendre_context* ATTENDRE_NULLABLE* ATTENDRE_NOT_NULL context);
ATTENDRE_C_API void attendre_context_destroy(attendre_context* ATTENDRE_NULLABLE context);
/* The device's name (text buffer, see the top of this header). */
ATTENDRE_C_API attendre_status attendre_context_device_name(const attendre_context* ATTENDRE_NOT_NULL context,
                                                            char* ATTENDRE_NULLABLE name,
                                                            size_t* ATTENDRE_NOT_NULL count);
/* The ATTENDRE_FEATURE_* bits switched off on this context (by its options
 * or ATTENDRE_DISABLE). */
ATTENDRE_C_API attendre_status attendre_context_disabled_features(const attendre_context* ATTENDRE_NOT_NULL context,
                                                                  uint32_t* ATTENDRE_NOT_NULL features);
/* Device memory attendre's objects hold now, and the most since creation
 * (neither pointer may be NULL). */
ATTENDRE_C_API attendre_status attendre_context_device_memory(const attendre_context* ATTENDRE_NOT_NULL context,
                                                              uint64_t* ATTENDRE_NOT_NULL bytes,
                                                              uint64_t* ATTENDRE_NOT_NULL peak_bytes);
/* Messages the validation layer recorded since the last call (when
 * validation is on): how many, and clears them; `text` (may be NULL with
 * *count 0) receives them one per line before they are cleared. On
 * ATTENDRE_ERROR_BUFFER_TOO_SMALL *messages is set and the messages are
 * kept for the call with a larger buffer. */
ATTENDRE_C_API attendre_status attendre_context_take_validation_messages(attendre_context* ATTENDRE_NOT_NULL context,
                                                                         size_t* ATTENDRE_NOT_NULL messages,
                                                                         char* ATTENDRE_NULLABLE text,
                                                                         size_t* ATTENDRE_NOT_NULL count);

/* ------------------------------------------------------------------------
 * Memory settings of one layer (spec sections 1 and 2): how much it holds
 * and how it evicts. Policies by name: fifo, lru, lfu, lra_last, lra_max,
 * lra_sum, lfa (lambda: its decay per position). */
typedef struct attendre_memory_setting {
  uint32_t chunk;        /* S: positions per step (stacks from a model; a layer's own is in its config) */
  uint32_t q_capacity;   /* N: how many positions each query waits */
  uint32_t kv_capacity;  /* M; 0 with a model: the model's trained context (at least S), the other
                            fields applying (and checked) as with any M */
  uint32_t top_k;        /* K; 0: K = M (full attention over the memory) */
  const char* ATTENDRE_NULLABLE policy; /* NULL: fifo; also the aliases sinks / streamingllm (fifo, n_sink 4 where 0),
                                          tova (lra_last), h2o (lfa, lambda 0, n_recent (M - n_sink) / 2 where 0) */
  double lambda;         /* lfa only */
  uint32_t n_sink;       /* positions < n_sink are never evicted */
  int protect_new;       /* entries of the chunk being inserted are not evicted */
  int shared_retrieval;  /* one top-K selection shared by all heads (else per head) */
  int causal;            /* a query sees only keys at positions <= its own */
  int flush_capable;     /* stacks: finish may flush (see attendre_stack_finish) */
  int fp16_memory;       /* keys, values and waiting queries stored in fp16 (math stays fp32);
                            inputs beyond 65504 are then refused */
  int fp16_activations;  /* stacks: the rows the matrix products read (normed, attention,
                            FFN-activated and final rows) stored in fp16, GELU from an fp16
                            table (as llama.cpp's CPU backend); math and accumulation stay fp32 */
  uint32_t n_recent;     /* W: positions among the W most recent (p > newest - W) are never
                            evicted; needs M >= n_sink + max(S, W) (n_sink + W without
                            protect_new); 0: none */
} attendre_memory_setting;

/* S = 64, N = 0, M = 0, K = 0, fifo, no sinks, no recent window, protect_new, per head, causal, fp32 memory and activations. */
ATTENDRE_C_API void attendre_memory_setting_defaults(attendre_memory_setting* ATTENDRE_NOT_NULL setting);

/* One chunk of rows in host memory, row-major: q rows * heads_q * head_dim,
 * k and v rows * heads_kv * head_dim, positions rows; valid NULL: all
 * valid; tags NULL: tag 0. Unused arrays may be NULL. */
typedef struct attendre_chunk {
  uint32_t rows;
  const float* ATTENDRE_NULLABLE q;
  const float* ATTENDRE_NULLABLE k;
  const float* ATTENDRE_NULLABLE v;
  const int64_t* ATTENDRE_NULLABLE positions;
  const uint8_t* ATTENDRE_NULLABLE valid;
  const uint32_t* ATTENDRE_NULLABLE tags;
} attendre_chunk;

typedef struct attendre_layer_config {
  uint32_t heads_q, heads_kv, head_dim;
  uint32_t chunk;  /* S */
  attendre_memory_setting memory;  /* memory.chunk is not used */
  double scale;    /* 0: 1 / sqrt(head_dim) */
  int tag_mask;    /* a query sees only keys with its tag */
} attendre_layer_config;

ATTENDRE_C_API void attendre_layer_config_defaults(attendre_layer_config* ATTENDRE_NOT_NULL config);

/* Bytes [offset, offset + size) of a VkBuffer the application created on
 * an adopted context's device (a non-dispatchable handle, hence uint64_t),
 * with TRANSFER_SRC usage (inputs) or TRANSFER_DST (outputs). */
typedef struct attendre_buffer_range {
  uint64_t buffer;  /* VkBuffer */
  uint64_t offset, size;
} attendre_buffer_range;

/* The K/V memory alone (paper Table 1): insert keys and values, retrieve
 * with queries. */
typedef struct attendre_kv_memory attendre_kv_memory;
/* config.chunk: the most rows one insert takes; max_queries per retrieve. */
ATTENDRE_C_API attendre_status attendre_kv_memory_create(attendre_context* ATTENDRE_NOT_NULL context,
                                                         const attendre_layer_config* ATTENDRE_NOT_NULL config,
                                                         uint32_t max_queries,
                                                         attendre_kv_memory* ATTENDRE_NULLABLE* ATTENDRE_NOT_NULL memory);
ATTENDRE_C_API void attendre_kv_memory_destroy(attendre_kv_memory* ATTENDRE_NULLABLE memory);
/* Inserts the valid rows' k, v, positions and tags (spec 2.1). */
ATTENDRE_C_API attendre_status attendre_kv_memory_insert(attendre_kv_memory* ATTENDRE_NOT_NULL memory,
                                                         const attendre_chunk* ATTENDRE_NOT_NULL rows);
/* Retrieves with the valid rows' q, positions and tags (spec 2.2-2.4):
 * outputs[query][head_q][dim] of each valid query, in order. */
ATTENDRE_C_API attendre_status attendre_kv_memory_retrieve(attendre_kv_memory* ATTENDRE_NOT_NULL memory,
                                                           const attendre_chunk* ATTENDRE_NOT_NULL queries,
                                                           float* ATTENDRE_NULLABLE outputs,
                                                           size_t* ATTENDRE_NOT_NULL count);
/* The entries held, ascending by position, with their policy scores
 * (either array may be NULL when *count is 0; scores may be NULL alone). */
ATTENDRE_C_API attendre_status attendre_kv_memory_snapshot(attendre_kv_memory* ATTENDRE_NOT_NULL memory,
                                                           int64_t* ATTENDRE_NULLABLE positions,
                                                           double* ATTENDRE_NULLABLE scores,
                                                           size_t* ATTENDRE_NOT_NULL count);
/* Embedding: insert and retrieve appended to the application's
 * `command_buffer`, with attendre_layer_record's contract (committed at
 * once; submitted, once, in recording order, to the context's queue before
 * the next call on this memory; consumer_stages / consumer_access as
 * there). Positions, valid flags and tags come from the chunk; keys and
 * values from its arrays or, with `kv` set, from the application's buffers
 * (kv[0] k, kv[1] v: rows * heads_kv * head_dim floats each); queries from
 * its q or the buffer `q` (rows * heads_q * head_dim floats). A recorded
 * retrieve writes the valid queries' outputs o[query][head_q][dim], packed,
 * into `outputs` (room for max_queries rows; NULL: only the policy scores
 * advance). A recorded insert copies out no evicted entries. */
ATTENDRE_C_API attendre_status attendre_kv_memory_record_insert(attendre_kv_memory* ATTENDRE_NOT_NULL memory,
                                                                void* ATTENDRE_NOT_NULL command_buffer,
                                                                const attendre_chunk* ATTENDRE_NOT_NULL rows,
                                                                const attendre_buffer_range* ATTENDRE_NULLABLE kv,
                                                                uint32_t consumer_stages, uint32_t consumer_access);
ATTENDRE_C_API attendre_status attendre_kv_memory_record_retrieve(attendre_kv_memory* ATTENDRE_NOT_NULL memory,
                                                                  void* ATTENDRE_NOT_NULL command_buffer,
                                                                  const attendre_chunk* ATTENDRE_NOT_NULL queries,
                                                                  const attendre_buffer_range* ATTENDRE_NULLABLE q,
                                                                  const attendre_buffer_range* ATTENDRE_NULLABLE outputs,
                                                                  uint32_t consumer_stages, uint32_t consumer_access);

/* One ATTENDRE layer (spec 3): a Q memory delaying queries by N, the K/V
 * memory, retrieval. */
typedef struct attendre_layer attendre_layer;
ATTENDRE_C_API attendre_status attendre_layer_create(attendre_context* ATTENDRE_NOT_NULL context,
                                                     const attendre_layer_config* ATTENDRE_NOT_NULL config,
                                                     attendre_layer* ATTENDRE_NULLABLE* ATTENDRE_NOT_NULL layer);
ATTENDRE_C_API void attendre_layer_destroy(attendre_layer* ATTENDRE_NULLABLE layer);
/* One chunk of at most S rows. The emitted queries' positions and outputs
 * are then read with attendre_layer_output. */
ATTENDRE_C_API attendre_status attendre_layer_step(attendre_layer* ATTENDRE_NOT_NULL layer,
                                                   const attendre_chunk* ATTENDRE_NOT_NULL chunk);
/* A chunk of padding (drains the Q memory), or a flush (every waiting query
 * retrieves at once). */
ATTENDRE_C_API attendre_status attendre_layer_drain_step(attendre_layer* ATTENDRE_NOT_NULL layer);
ATTENDRE_C_API attendre_status attendre_layer_flush(attendre_layer* ATTENDRE_NOT_NULL layer);
ATTENDRE_C_API attendre_status attendre_layer_has_pending(const attendre_layer* ATTENDRE_NOT_NULL layer,
                                                          int* ATTENDRE_NOT_NULL pending);
/* The last step's emitted positions (in stream order) and their outputs
 * o[query][head_q][dim]; either buffer may be NULL with its count 0. */
ATTENDRE_C_API attendre_status attendre_layer_output(const attendre_layer* ATTENDRE_NOT_NULL layer,
                                                     int64_t* ATTENDRE_NULLABLE positions,
                                                     size_t* ATTENDRE_NOT_NULL position_count,
                                                     float* ATTENDRE_NULLABLE outputs,
                                                     size_t* ATTENDRE_NOT_NULL output_count);
ATTENDRE_C_API attendre_status attendre_layer_snapshot(attendre_layer* ATTENDRE_NOT_NULL layer,
                                                       int64_t* ATTENDRE_NULLABLE positions,
                                                       double* ATTENDRE_NULLABLE scores,
                                                       size_t* ATTENDRE_NOT_NULL count);

/* Embedding (docs/architecture.md, "Recording into an application's
 * command buffer"): appends one step to `command_buffer` (a VkCommandBuffer
 * the application has begun and will end and submit, once, to the
 * context's queue before the next call on this layer). Positions, valid
 * flags and tags come from `chunk`; q, k and v from its arrays, or, with
 * `qkv` set, from the application's buffers: qkv[0] q, qkv[1] k, qkv[2] v
 * (rows * heads * head_dim floats each, row-major). `outputs` (NULL: none)
 * receives the emitted rows o[query][head_q][dim], packed (room for S rows).
 * The recorded commands start with a barrier from every stage's writes and
 * end with one to consumer_stages / consumer_access (VkPipelineStageFlags,
 * VkAccessFlags; 0: all commands, memory read and write) and the host.
 * `positions` receives the emitted positions: *count must hold S, checked
 * before recording (count NULL: not returned); they are also
 * attendre_layer_output's positions, with no outputs there. Non-finite
 * outputs are reported by the layer's next call that waits for the device. */
ATTENDRE_C_API attendre_status attendre_layer_record(attendre_layer* ATTENDRE_NOT_NULL layer,
                                                     void* ATTENDRE_NOT_NULL command_buffer,
                                                     const attendre_chunk* ATTENDRE_NOT_NULL chunk,
                                                     const attendre_buffer_range* ATTENDRE_NULLABLE qkv,
                                                     const attendre_buffer_range* ATTENDRE_NULLABLE outputs,
                                                     uint32_t consumer_stages, uint32_t consumer_access,
                                                     int64_t* ATTENDRE_NULLABLE positions,
                                                     size_t* ATTENDRE_NULLABLE count);

/* ------------------------------------------------------------------------
 * Steps that do not block: a submit returns a ticket at once (two steps
 * may be in flight: the host prepares the next while the device runs one);
 * wait for it or poll it, then collect its result, once, before the step
 * after next is submitted. A ticket is valid while the layer or stack that
 * made it lives; destroy it once collected (or not needed). */
typedef struct attendre_ticket attendre_ticket;

/* A semaphore of the application's that a submitted step waits for: a
 * binary one (value 0) or a timeline one reaching `value` (needs timeline
 * semaphores: attendre_context_timeline). */
typedef struct attendre_semaphore_wait {
  uint64_t semaphore;  /* VkSemaphore */
  uint64_t value;
  uint32_t stages;     /* VkPipelineStageFlags waiting; 0: all commands */
} attendre_semaphore_wait;

typedef struct attendre_submit_options {
  const attendre_semaphore_wait* ATTENDRE_NULLABLE waits; /* NULL with wait_count 0: none */
  size_t wait_count;
  /* The application's range (TRANSFER_DST) receiving the emitted rows as a
   * record writes them, packed: a layer's outputs, a stack's final hidden
   * rows (room for S rows); NULL: none. Its readers wait for the ticket's
   * semaphore. */
  const attendre_buffer_range* ATTENDRE_NULLABLE outputs;
} attendre_submit_options;

/* attendre_layer_step without blocking (options NULL: none). */
ATTENDRE_C_API attendre_status attendre_layer_submit(attendre_layer* ATTENDRE_NOT_NULL layer,
                                                     const attendre_chunk* ATTENDRE_NOT_NULL chunk,
                                                     const attendre_submit_options* ATTENDRE_NULLABLE options,
                                                     attendre_ticket* ATTENDRE_NULLABLE* ATTENDRE_NOT_NULL ticket);
/* Waits for the ticket's step; its positions and outputs are then read
 * with attendre_layer_output. */
ATTENDRE_C_API attendre_status attendre_layer_result(attendre_layer* ATTENDRE_NOT_NULL layer,
                                                     const attendre_ticket* ATTENDRE_NOT_NULL ticket);
ATTENDRE_C_API void attendre_ticket_destroy(attendre_ticket* ATTENDRE_NULLABLE ticket);
/* Whether the step finished on the device (never blocks). */
ATTENDRE_C_API attendre_status attendre_ticket_ready(const attendre_ticket* ATTENDRE_NOT_NULL ticket,
                                                     int* ATTENDRE_NOT_NULL ready);
/* Blocks up to timeout_ns (UINT64_MAX: forever); *finished: whether it did. */
ATTENDRE_C_API attendre_status attendre_ticket_wait(const attendre_ticket* ATTENDRE_NOT_NULL ticket,
                                                    uint64_t timeout_ns, int* ATTENDRE_NOT_NULL finished);
/* The step's number on the object that submitted it, from 0. */
ATTENDRE_C_API attendre_status attendre_ticket_step(const attendre_ticket* ATTENDRE_NOT_NULL ticket,
                                                    uint64_t* ATTENDRE_NOT_NULL step);
/* Chaining on the device: the timeline semaphore (a VkSemaphore) the step
 * signals to *value when it completes, for the application's own
 * vkQueueSubmit to wait on. ATTENDRE_ERROR_UNSUPPORTED on a context without
 * timeline semaphores (absent, or disabled: then only host waits work). */
ATTENDRE_C_API attendre_status attendre_ticket_semaphore(const attendre_ticket* ATTENDRE_NOT_NULL ticket,
                                                         uint64_t* ATTENDRE_NOT_NULL semaphore,
                                                         uint64_t* ATTENDRE_NOT_NULL value);
/* Whether the context's tickets carry timeline semaphores (0: fences). */
ATTENDRE_C_API attendre_status attendre_context_timeline(const attendre_context* ATTENDRE_NOT_NULL context,
                                                         int* ATTENDRE_NOT_NULL timeline);

#ifdef __cplusplus
}
#endif

#if defined(__clang__)
#pragma clang diagnostic pop
#endif

/* Models, tokenizers, stacks and generation: the language-model half of the
 * API, in its own file; this header includes it, so one include serves. */
#include <attendre/attendre_model.h>

#endif /* ATTENDRE_ATTENDRE_H */
