// The C API's boundary (include/attendre/attendre.h): the handles behind its
// opaque types, the guard every exported function runs its body in (no
// exception crosses into C), and the one output-buffer convention.
#pragma once

#include <attendre/attendre.h>
#include <attendre/context.hpp>
#include <attendre/gpu.hpp>
#include <attendre/gpu_stack.hpp>
#include <attendre/memory_plan.hpp>
#include <attendre/model.hpp>
#include <attendre/tokenizer.hpp>

#include "core/fail.hpp"

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
  explicit attendre_context(const attendre::ContextOptions& options) : context(options) {}
  attendre_context(const attendre::ExternalDevice& external, const attendre::LimitOverrides& limits)
      : context(external, limits) {}
  attendre::Context context;
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

// The status and message of a caught exception: attendre::Error by its code,
// std::bad_alloc as out of host memory, anything else as internal.
attendre_status failed_with(const std::exception_ptr& error) noexcept;

// Runs `body` (returning attendre_status) with the thread's message cleared;
// every exception becomes its status and message.
template <class Body>
attendre_status guard(Body&& body) noexcept {
  try {
    failure(ATTENDRE_OK, {});
    return body();
  } catch (...) {
    return failed_with(std::current_exception());
  }
}

// invalid_argument "<what> is NULL" unless `pointer` is set.
template <class T>
T& need(T* pointer, const char* what) {
  if (!pointer) fail(ErrorCode::invalid_argument, std::string(what) + " is NULL");
  return *pointer;
}

// The buffer convention (attendre.h): whether `buffer` holds `needed`
// elements; if not, *count becomes `needed`.
bool fits(const void* buffer, size_t* count, size_t needed, const char* what);
// BUFFER_TOO_SMALL with the message naming `what` and the sizes.
attendre_status too_small(const char* what, size_t needed);

template <class T>
attendre_status copy_out(std::span<const T> values, T* buffer, size_t* count, const char* what) {
  if (!fits(buffer, count, values.size(), what)) return too_small(what, values.size());
  std::copy(values.begin(), values.end(), buffer);
  *count = values.size();
  return ATTENDRE_OK;
}
// Text with its NUL.
attendre_status copy_text(std::string_view text, char* buffer, size_t* count, const char* what);

// A snapshot into the caller's positions and (optional) scores.
attendre_status snapshot_out(const MemorySnapshot& held, int64_t* positions, double* scores, size_t* count,
                             const char* what);

// A C memory setting as the library's (the policy parsed by name).
MemorySetting memory_setting(const attendre_memory_setting& setting);

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
SubmitOptions submit_options(const attendre_submit_options* options, const char* what);

// A command buffer from its C form (a dispatchable handle: a pointer).
inline VkCommandBuffer command_buffer(void* cb, const char* what) {
  if (!cb) fail(ErrorCode::invalid_argument, std::string(what) + ": command_buffer is NULL");
  return static_cast<VkCommandBuffer>(cb);
}

// A new ticket handle into *out (checked first, NULL on failure).
template <class Submit>
attendre_status ticket_out(attendre_ticket** out, const char* what, Submit&& submit) {
  need(out, (std::string(what) + ": ticket").c_str());
  *out = nullptr;
  auto handle = std::make_unique<attendre_ticket>();
  handle->ticket = submit();
  *out = handle.release();
  return ATTENDRE_OK;
}

}  // namespace attendre::capi
