// The C API's boundary (include/attendre/attendre.h): the handles behind its
// opaque types, the guard every exported function runs its body in (the
// library's failures arrive as values and become a status and the thread's
// message; nothing crosses into C), and the one output-buffer convention.
// Builds with -fno-exceptions (the C test is built that way in CI).
#pragma once

#include <attendre/attendre.h>
#include <attendre/context.hpp>
#include <attendre/gpu.hpp>
#include <attendre/gpu_stack.hpp>
#include <attendre/memory_plan.hpp>
#include <attendre/model.hpp>
#include <attendre/tokenizer.hpp>

#include "core/try.hpp"

#include <algorithm>
#include <exception>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <optional>

// The handles. Each owns its C++ object, and the results a C caller reads
// after the call that made them.
struct attendre_context {
  explicit attendre_context(std::unique_ptr<attendre::Context> made) : owned(std::move(made)), context(*owned) {}
  std::unique_ptr<attendre::Context> owned;
  attendre::Context& context;
};

struct attendre_kv_memory {
  attendre::LayerConfig config;
  uint32_t max_queries = 0;
  std::unique_ptr<attendre::gpu::KeyValueMemory> memory;
};

struct attendre_layer {
  std::unique_ptr<attendre::gpu::Layer> layer;
  attendre::StepResult last;  // the last step's emitted positions and outputs
};

struct attendre_model {
  explicit attendre_model(attendre::Model m) : model(std::move(m)) {}
  attendre::Model model;
};

struct attendre_tokenizer {
  explicit attendre_tokenizer(attendre::Tokenizer t) : tokenizer(std::move(t)) {}
  attendre::Tokenizer tokenizer;
};

// A submitted step's ticket (valid while the layer or stack that made it lives).
struct attendre_ticket {
  attendre::Ticket ticket;
};

struct attendre_stack {
  std::unique_ptr<attendre::gpu::Stack> stack;
  attendre::StackOutput output;  // the last step's, finish's or decode's
  std::string answer;            // the last read_document's
};

namespace attendre::capi {

// Sets the calling thread's message and returns `status`.
attendre_status failure(attendre_status status, const std::string& message);

// What an exported function's body returns: ATTENDRE_OK, one of the C API's
// own statuses whose message is already set (buffer too small), or a failed
// Status from the library, whose code and message it takes. So a body
// propagates the library's failures with ATTENDRE_TRY / ATTENDRE_TRY_ASSIGN
// / ATTENDRE_REQUIRE (core/try.hpp) as the library does.
class Outcome {
 public:
  Outcome(attendre_status status) : status_(status) {}  // NOLINT(google-explicit-constructor)
  Outcome(const Status& status);                        // NOLINT(google-explicit-constructor)
  attendre_status status() const { return status_; }

 private:
  attendre_status status_;
};

#if defined(__cpp_exceptions)
// The status and message of an exception: attendre::Error by its code,
// std::bad_alloc as out of host memory, anything else as internal.
attendre_status failed_with(const std::exception_ptr& error) noexcept;
#endif

// Runs `body` (returning an Outcome) with the thread's message cleared. The
// library reports failures as values; built with exceptions, what the
// standard library may still throw (std::bad_alloc) is caught here too, so
// that no exception reaches C.
template <class Body>
attendre_status guard(Body&& body) noexcept {
#if defined(__cpp_exceptions)
  try {
#endif
    failure(ATTENDRE_OK, {});
    return Outcome(body()).status();
#if defined(__cpp_exceptions)
  } catch (...) {
    return failed_with(std::current_exception());
  }
#endif
}

// Returns the Outcome of `expr` from the enclosing body unless it is ATTENDRE_OK.
#define ATTENDRE_C_TRY(expr)                                                  \
  do {                                                                        \
    const ::attendre::capi::Outcome attendre_c_outcome_ = (expr);             \
    if (attendre_c_outcome_.status() != ATTENDRE_OK) return attendre_c_outcome_; \
  } while (false)

// Returns invalid_argument "<what> is NULL" from the enclosing body unless
// `pointer` is set.
#define ATTENDRE_C_NEED(pointer, what) ATTENDRE_REQUIRE((pointer) != nullptr, std::string(what) + " is NULL")

// The buffer convention (attendre.h): whether `buffer` holds `needed`
// elements; if not, count becomes `needed`.
bool fits(const void* buffer, size_t& count, size_t needed);
// BUFFER_TOO_SMALL with the message naming `what` and the sizes.
attendre_status too_small(const char* what, size_t needed);
// The convention whole: `count` must be set ("<what> count is NULL"), then
// ATTENDRE_OK when `buffer` holds `needed` elements, else BUFFER_TOO_SMALL
// with *count = needed.
Outcome room(const void* buffer, size_t* count, size_t needed, const char* what);

template <class T>
Outcome copy_out(std::span<const T> values, T* buffer, size_t* count, const char* what) {
  ATTENDRE_C_TRY(room(buffer, count, values.size(), what));
  std::copy(values.begin(), values.end(), buffer);
  *count = values.size();
  return ATTENDRE_OK;
}
// Text with its NUL.
Outcome copy_text(std::string_view text, char* buffer, size_t* count, const char* what);

// A snapshot into the caller's positions and (optional) scores.
Outcome snapshot_out(const MemorySnapshot& held, int64_t* positions, double* scores, size_t* count,
                     const char* what);

// A C memory setting as the library's (the policy parsed by name).
// `capacity`: M where the struct's 0 stands for a model's full context (an
// alias's defaults, h2o's window, follow it).
Result<MemorySetting> memory_setting(const attendre_memory_setting& setting, std::optional<uint32_t> capacity = {});

// A non-dispatchable Vulkan handle from its C form: a pointer on 64-bit
// platforms, a uint64_t elsewhere (a template, so that only the branch for
// this platform's handle type is compiled).
template <class Handle>
Handle handle_of(uint64_t value) {
  if constexpr (std::is_pointer_v<Handle>)
    return reinterpret_cast<Handle>(static_cast<uintptr_t>(value));
  else
    return static_cast<Handle>(value);
}
template <class Handle>
uint64_t handle_value(Handle handle) {
  if constexpr (std::is_pointer_v<Handle>)
    return static_cast<uint64_t>(reinterpret_cast<uintptr_t>(handle));
  else
    return static_cast<uint64_t>(handle);
}

inline BufferRange buffer_range(const attendre_buffer_range& r) {
  return {handle_of<VkBuffer>(r.buffer), r.offset, r.size};
}
inline std::optional<BufferRange> buffer_range(const attendre_buffer_range* r) {
  if (!r) return std::nullopt;
  return buffer_range(*r);
}

// The consumer of recorded outputs: 0 is no valid stage mask, so it stands
// for the library's default consumer.
inline Consumer consumer(uint32_t stages, uint32_t access) {
  return stages == 0 ? Consumer{} : Consumer{stages, access};
}

// The library's submit options from the C ones (NULL: none).
Result<SubmitOptions> submit_options(const attendre_submit_options* options, const char* what);

// A command buffer from its C form (a dispatchable handle: a pointer).
inline Result<VkCommandBuffer> command_buffer(void* cb, const char* what) {
  ATTENDRE_C_NEED(cb, std::string(what) + ": command_buffer");
  return static_cast<VkCommandBuffer>(cb);
}

// A new ticket handle into *out (checked first, NULL on failure) from
// `submit`, which returns a Result<Ticket>.
template <class Submit>
Outcome ticket_out(attendre_ticket** out, const char* what, Submit&& submit) {
  ATTENDRE_C_NEED(out, std::string(what) + ": ticket");
  *out = nullptr;
  auto handle = std::make_unique<attendre_ticket>();
  ATTENDRE_TRY_ASSIGN(handle->ticket, submit());
  *out = handle.release();
  return ATTENDRE_OK;
}

}  // namespace attendre::capi
