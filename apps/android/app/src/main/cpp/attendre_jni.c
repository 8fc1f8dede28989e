/* JNI over attendre's C API (include/attendre/attendre.h) for
 * org.attendre.reader.AttendreNative: the Android app's binding, and on a
 * desktop JDK the host test's (tests/jni). Nothing here reaches past the C
 * API, so what the C API's tests verify holds for Java too.
 *
 * Conventions, and why:
 * - Handles are jlong (a pointer fits in 64 bits on every ABI); 0 is NULL,
 *   which the C API answers with ATTENDRE_ERROR_INVALID_ARGUMENT, so a
 *   closed handle gives an exception, not a crash.
 * - Text crosses as byte[] holding UTF-8, encoded and decoded in Java:
 *   JNI's own string functions speak "modified UTF-8", which writes NUL and
 *   characters outside the BMP differently from the UTF-8 the library
 *   checks (and CheckJNI aborts on invalid modified UTF-8 handed to
 *   NewStringUTF).
 * - Every failure throws org.attendre.reader.AttendreException(status,
 *   status name, message) with the C API's one-line message; the native
 *   function then returns a dummy value that Java never sees. */
#include <attendre/attendre.h>

#include <jni.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EXCEPTION_CLASS "org/attendre/reader/AttendreException"

/* A Java byte[] (NULL when `length` is 0 and `bytes` is NULL: an empty
 * array), or NULL with OutOfMemoryError pending. */
static jbyteArray new_bytes(JNIEnv* env, const char* bytes, size_t length) {
  jbyteArray array;
  if (length > (size_t)INT32_MAX) length = (size_t)INT32_MAX; /* Java arrays stop there; no C API text nears it */
  array = (*env)->NewByteArray(env, (jsize)length);
  if (array != NULL && length > 0) (*env)->SetByteArrayRegion(env, array, 0, (jsize)length, (const jbyte*)bytes);
  return array;
}

/* A Java long[] of `count` values, or NULL with OutOfMemoryError pending. */
static jlongArray new_longs(JNIEnv* env, const jlong* values, jsize count) {
  jlongArray array = (*env)->NewLongArray(env, count);
  if (array != NULL && count > 0) (*env)->SetLongArrayRegion(env, array, 0, count, values);
  return array;
}

/* Throws AttendreException(status, name, message). When the exception
 * itself cannot be built (no memory, class missing), whatever JNI left
 * pending (OutOfMemoryError, NoClassDefFoundError) reaches Java instead. */
static void throw_status(JNIEnv* env, attendre_status status, const char* message) {
  jclass type;
  jmethodID constructor;
  jbyteArray name, text;
  jobject exception;
  if ((*env)->ExceptionCheck(env)) return; /* one exception at a time: keep the first */
  type = (*env)->FindClass(env, EXCEPTION_CLASS);
  if (type == NULL) return;
  constructor = (*env)->GetMethodID(env, type, "<init>", "(I[B[B)V");
  if (constructor == NULL) return;
  name = new_bytes(env, attendre_status_name(status), strlen(attendre_status_name(status)));
  if (name == NULL) return;
  text = new_bytes(env, message, strlen(message));
  if (text == NULL) return;
  exception = (*env)->NewObject(env, type, constructor, (jint)status, name, text);
  if (exception != NULL) (*env)->Throw(env, (jthrowable)exception);
}

/* 1 when `status` is ATTENDRE_OK; otherwise throws with the calling
 * thread's message and returns 0. */
static int check(JNIEnv* env, attendre_status status) {
  if (status == ATTENDRE_OK) return 1;
  throw_status(env, status, attendre_last_error());
  return 0;
}

/* A NUL-terminated copy of the UTF-8 in `bytes` (free() it), NULL for a
 * null array (the C API then names the argument), or NULL with an exception
 * pending (*failed set): a C string cannot hold a NUL byte, so one inside
 * is refused rather than cut short silently. */
static char* c_string(JNIEnv* env, jbyteArray bytes, const char* what, int* failed) {
  jsize length;
  char* copy;
  *failed = 0;
  if (bytes == NULL) return NULL;
  length = (*env)->GetArrayLength(env, bytes);
  copy = malloc((size_t)length + 1);
  if (copy == NULL) {
    throw_status(env, ATTENDRE_ERROR_OUT_OF_HOST_MEMORY, "out of host memory copying a string argument");
    *failed = 1;
    return NULL;
  }
  (*env)->GetByteArrayRegion(env, bytes, 0, length, (jbyte*)copy);
  copy[length] = '\0';
  if (memchr(copy, '\0', (size_t)length) != NULL) {
    char message[128];
    snprintf(message, sizeof message, "%s contains a NUL byte", what);
    free(copy);
    throw_status(env, ATTENDRE_ERROR_INVALID_ARGUMENT, message);
    *failed = 1;
    return NULL;
  }
  return copy;
}

/* jlong <-> handle: through uintptr_t, the integer a pointer fits. */
#define HANDLE(type, value) ((type*)(uintptr_t)(value))
#define JLONG(pointer) ((jlong)(uintptr_t)(pointer))

JNIEXPORT jint JNICALL Java_org_attendre_reader_AttendreNative_apiVersion(JNIEnv* env, jclass type) {
  (void)env;
  (void)type;
  return (jint)attendre_version();
}

JNIEXPORT jbyteArray JNICALL Java_org_attendre_reader_AttendreNative_versionStringBytes(JNIEnv* env, jclass type) {
  (void)type;
  return new_bytes(env, attendre_version_string(), strlen(attendre_version_string()));
}

JNIEXPORT jlong JNICALL Java_org_attendre_reader_AttendreNative_contextCreateBytes(JNIEnv* env, jclass type,
                                                                                jbyteArray device) {
  attendre_context_options options;
  attendre_context* context = NULL;
  attendre_status status;
  int failed;
  char* name = c_string(env, device, "device", &failed);
  (void)type;
  if (failed) return 0;
  attendre_context_options_defaults(&options); /* validation, limits, kernels: as the environment says */
  options.device = name;
  status = attendre_context_create(&options, &context);
  free(name);
  return check(env, status) ? JLONG(context) : 0;
}

/* Destroys a handle of `kind` (0 context, 1 model, 2 stack); 0 (NULL) is
 * allowed, as in the C API. */
JNIEXPORT void JNICALL Java_org_attendre_reader_AttendreNative_destroy(JNIEnv* env, jclass type, jlong handle,
                                                                        jint kind) {
  (void)env;
  (void)type;
  if (kind == 0) attendre_context_destroy(HANDLE(attendre_context, handle));
  else if (kind == 1) attendre_model_destroy(HANDLE(attendre_model, handle));
  else attendre_stack_destroy(HANDLE(attendre_stack, handle));
}

/* Text a C API call writes into a caller's buffer (the header's one
 * scheme: ask with *count 0, allocate, ask again), as a byte[] without its
 * NUL; NULL with an exception pending. `call` is called twice. */
typedef attendre_status (*text_call)(const void* handle, char* text, size_t* count);

static jbyteArray text_of(JNIEnv* env, text_call call, const void* handle) {
  size_t count = 0;
  char* text;
  jbyteArray result;
  attendre_status status = call(handle, NULL, &count);
  if (status != ATTENDRE_ERROR_BUFFER_TOO_SMALL) {
    check(env, status == ATTENDRE_OK ? ATTENDRE_ERROR_INTERNAL : status); /* OK with no room for the NUL: a bug */
    return NULL;
  }
  text = malloc(count);
  if (text == NULL) {
    throw_status(env, ATTENDRE_ERROR_OUT_OF_HOST_MEMORY, "out of host memory reading text");
    return NULL;
  }
  status = call(handle, text, &count);
  result = check(env, status) ? new_bytes(env, text, count - 1) : NULL;
  free(text);
  return result;
}

static attendre_status device_name(const void* context, char* text, size_t* count) {
  return attendre_context_device_name((const attendre_context*)context, text, count);
}

JNIEXPORT jbyteArray JNICALL Java_org_attendre_reader_AttendreNative_contextDeviceNameBytes(JNIEnv* env, jclass type,
                                                                                        jlong context) {
  (void)type;
  return text_of(env, device_name, HANDLE(const attendre_context, context));
}

static attendre_status validation_messages(const void* context, char* text, size_t* count) {
  size_t messages = 0;
  /* Not const in the C API (taking clears them); the handle came in as a jlong. */
  return attendre_context_take_validation_messages((attendre_context*)(uintptr_t)context, &messages, text, count);
}

JNIEXPORT jbyteArray JNICALL Java_org_attendre_reader_AttendreNative_contextTakeValidationMessagesBytes(JNIEnv* env,
                                                                                                    jclass type,
                                                                                                    jlong context) {
  (void)type;
  return text_of(env, validation_messages, HANDLE(const attendre_context, context));
}

JNIEXPORT jlong JNICALL Java_org_attendre_reader_AttendreNative_modelOpenBytes(JNIEnv* env, jclass type, jbyteArray path) {
  int failed;
  char* file = c_string(env, path, "path", &failed);
  attendre_model* model = NULL;
  attendre_status status;
  (void)type;
  if (failed) return 0;
  status = attendre_model_open(file, NULL, &model);
  free(file);
  return check(env, status) ? JLONG(model) : 0;
}

/* A model's or a stack's numbers, six each: kind 0, a model: {context
 * length, blocks, hidden, vocab, parameters, tensor bytes} (its two strings
 * come from modelText); kind 1, a stack: {hidden, vocab, chunk, blocks,
 * drain positions, device bytes}. */
JNIEXPORT jlongArray JNICALL Java_org_attendre_reader_AttendreNative_numbers(JNIEnv* env, jclass type, jlong handle,
                                                                              jint kind) {
  attendre_model_info model;
  attendre_stack_info stack;
  (void)type;
  if (kind == 0) {
    if (!check(env, attendre_model_info_get(HANDLE(const attendre_model, handle), &model))) return NULL;
    {
      const jlong numbers[6] = {model.context_length, model.blocks,     model.hidden,
                                model.vocab,          (jlong)model.parameters, (jlong)model.tensor_bytes};
      return new_longs(env, numbers, 6);
    }
  }
  if (!check(env, attendre_stack_info_get(HANDLE(const attendre_stack, handle), &stack))) return NULL;
  {
    const jlong numbers[6] = {stack.hidden, stack.vocab, stack.chunk, stack.blocks, (jlong)stack.drain_positions,
                              (jlong)stack.device_bytes};
    return new_longs(env, numbers, 6);
  }
}

/* which 0: the architecture, 1: the name. */
JNIEXPORT jbyteArray JNICALL Java_org_attendre_reader_AttendreNative_modelText(JNIEnv* env, jclass type, jlong model,
                                                                                jint which) {
  attendre_model_info info;
  const char* text;
  (void)type;
  if (!check(env, attendre_model_info_get(HANDLE(const attendre_model, model), &info))) return NULL;
  text = which == 0 ? info.architecture : info.name;
  return new_bytes(env, text, strlen(text));
}

/* The model's stack under its default memory plan with these fields
 * changed; chunk and kv_capacity 0 keep the plan's (S = 64, M = the
 * trained context), top_k 0 is K = M, policy NULL fifo. */
JNIEXPORT jlong JNICALL Java_org_attendre_reader_AttendreNative_stackCreateNative(
    JNIEnv* env, jclass type, jlong context, jlong model, jint chunk, jint q_capacity, jint kv_capacity, jint top_k,
    jbyteArray policy, jdouble lambda, jint n_sink, jint n_recent, jboolean flush_capable) {
  attendre_memory_setting memory;
  attendre_stack* stack = NULL;
  attendre_status status;
  int failed;
  char* name;
  const attendre_model* m = HANDLE(const attendre_model, model);
  (void)type;
  /* Negative counts would wrap to huge unsigned values; the message names
   * the field as the C API would. */
  if (chunk < 0 || q_capacity < 0 || kv_capacity < 0 || top_k < 0 || n_sink < 0 || n_recent < 0) {
    throw_status(env, ATTENDRE_ERROR_INVALID_ARGUMENT,
                 "stackCreate: chunk, qCapacity, kvCapacity, topK, nSink and nRecent must not be negative");
    return 0;
  }
  if (!check(env, attendre_model_default_memory(m, &memory))) return 0;
  name = c_string(env, policy, "policy", &failed);
  if (failed) return 0;
  if (chunk > 0) memory.chunk = (uint32_t)chunk;
  memory.q_capacity = (uint32_t)q_capacity;
  if (kv_capacity > 0) memory.kv_capacity = (uint32_t)kv_capacity;
  memory.top_k = (uint32_t)top_k;
  if (name != NULL) memory.policy = name;
  memory.lambda = lambda;
  memory.n_sink = (uint32_t)n_sink;
  memory.n_recent = (uint32_t)n_recent;
  memory.flush_capable = flush_capable ? 1 : 0;
  status = attendre_stack_create_from_model(HANDLE(attendre_context, context), HANDLE(attendre_model, model), &memory,
                                            &stack);
  free(name);
  return check(env, status) ? JLONG(stack) : 0;
}

/* Block `block`'s retained positions, ascending. */
JNIEXPORT jlongArray JNICALL Java_org_attendre_reader_AttendreNative_stackRetained(JNIEnv* env, jclass type,
                                                                                    jlong stack, jint block) {
  attendre_stack* s = HANDLE(attendre_stack, stack);
  size_t count = 0;
  int64_t* positions;
  jlongArray result = NULL;
  attendre_status status;
  (void)type;
  if (block < 0) {
    throw_status(env, ATTENDRE_ERROR_INVALID_ARGUMENT, "stackRetained: block must not be negative");
    return NULL;
  }
  status = attendre_stack_snapshot(s, (uint32_t)block, NULL, NULL, &count);
  if (status == ATTENDRE_OK) return new_longs(env, NULL, 0); /* an empty memory */
  if (status != ATTENDRE_ERROR_BUFFER_TOO_SMALL) {
    check(env, status);
    return NULL;
  }
  positions = malloc(count * sizeof *positions);
  if (positions == NULL) {
    throw_status(env, ATTENDRE_ERROR_OUT_OF_HOST_MEMORY, "out of host memory reading a snapshot");
    return NULL;
  }
  if (check(env, attendre_stack_snapshot(s, (uint32_t)block, positions, NULL, &count))) {
    /* jlong and int64_t are both signed 64-bit integers. */
    result = new_longs(env, (const jlong*)positions, (jsize)count);
  }
  free(positions);
  return result;
}

static attendre_status stack_answer(const void* stack, char* text, size_t* count) {
  return attendre_stack_answer((const attendre_stack*)stack, text, count);
}

/* attendre_read_document: the answer's UTF-8; documentTokens (may be null,
 * else at least one element) receives the positions the document took. */
JNIEXPORT jbyteArray JNICALL Java_org_attendre_reader_AttendreNative_readDocumentBytes(
    JNIEnv* env, jclass type, jlong stack, jlong model, jbyteArray question, jbyteArray text, jint answer_tokens,
    jboolean flush, jlongArray document_tokens) {
  attendre_stack* s = HANDLE(attendre_stack, stack);
  uint64_t tokens = 0;
  size_t count = 0;
  jbyte* document = NULL;
  jsize length = 0;
  attendre_status status;
  int failed;
  char* q;
  (void)type;
  if (answer_tokens < 0) {
    throw_status(env, ATTENDRE_ERROR_INVALID_ARGUMENT, "readDocument: answerTokens must not be negative");
    return NULL;
  }
  if (document_tokens != NULL && (*env)->GetArrayLength(env, document_tokens) < 1) {
    throw_status(env, ATTENDRE_ERROR_INVALID_ARGUMENT, "readDocument: documentTokens has no element");
    return NULL;
  }
  q = c_string(env, question, "question", &failed);
  if (failed) return NULL;
  /* The document may be long and holds no NUL requirement (it has a
   * length): read in place, or through JNI's copy. */
  if (text != NULL) {
    length = (*env)->GetArrayLength(env, text);
    document = (*env)->GetByteArrayElements(env, text, NULL);
    if (document == NULL) { /* OutOfMemoryError pending */
      free(q);
      return NULL;
    }
  }
  /* The answer's size is known only afterwards: asked with no buffer, the
   * read is done, the answer kept, and text_of reads it back. */
  status = attendre_read_document(s, HANDLE(const attendre_model, model), q, (const char*)document, (size_t)length,
                                  (uint32_t)answer_tokens, flush ? 1 : 0, NULL, &count, &tokens);
  if (document != NULL) (*env)->ReleaseByteArrayElements(env, text, document, JNI_ABORT); /* nothing written */
  free(q);
  if (status != ATTENDRE_ERROR_BUFFER_TOO_SMALL) {
    check(env, status == ATTENDRE_OK ? ATTENDRE_ERROR_INTERNAL : status); /* OK with no room for the NUL: a bug */
    return NULL;
  }
  if (document_tokens != NULL) {
    const jlong value = (jlong)tokens;
    (*env)->SetLongArrayRegion(env, document_tokens, 0, 1, &value);
  }
  return text_of(env, stack_answer, s);
}
