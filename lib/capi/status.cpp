// Versions, status codes, the thread's last message and the buffer convention.
#include "capi/capi.hpp"

#include <new>

namespace attendre::capi {
namespace {

// The message of this thread's last call (attendre_last_error).
thread_local std::string last_message;

attendre_status status_of(ErrorCode code) {
  switch (code) {
    case ErrorCode::invalid_argument: return ATTENDRE_ERROR_INVALID_ARGUMENT;
    case ErrorCode::infeasible_config: return ATTENDRE_ERROR_INFEASIBLE_CONFIG;
    case ErrorCode::unsupported: return ATTENDRE_ERROR_UNSUPPORTED;
    case ErrorCode::out_of_device_memory: return ATTENDRE_ERROR_OUT_OF_DEVICE_MEMORY;
    case ErrorCode::out_of_host_memory: return ATTENDRE_ERROR_OUT_OF_HOST_MEMORY;
    case ErrorCode::device_lost: return ATTENDRE_ERROR_DEVICE_LOST;
    case ErrorCode::vulkan_error: return ATTENDRE_ERROR_VULKAN;
    case ErrorCode::io_error: return ATTENDRE_ERROR_IO;
    case ErrorCode::malformed_input: return ATTENDRE_ERROR_MALFORMED_INPUT;
    case ErrorCode::numerical_error: return ATTENDRE_ERROR_NUMERICAL;
  }
  return ATTENDRE_ERROR_INTERNAL;
}

}  // namespace

attendre_status failure(attendre_status status, const std::string& message) {
#if defined(__cpp_exceptions)
  try {
    last_message = message;
  } catch (...) {
    last_message.clear();  // no room for the message: the status still says what failed
  }
#else
  last_message = message;
#endif
  return status;
}

Outcome::Outcome(const Status& status)
    : status_(status.ok() ? ATTENDRE_OK : failure(status_of(status.code()), status.message())) {}

#if defined(__cpp_exceptions)
attendre_status failed_with(const std::exception_ptr& error) noexcept {
  try {
    std::rethrow_exception(error);
  } catch (const Error& e) {
    return failure(status_of(e.code()), e.what());
  } catch (const std::bad_alloc&) {
    return failure(ATTENDRE_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
  } catch (const std::exception& e) {
    return failure(ATTENDRE_ERROR_INTERNAL, std::string("internal error: ") + e.what());
  } catch (...) {
    return failure(ATTENDRE_ERROR_INTERNAL, "internal error: an unknown exception");
  }
}
#endif

bool fits(const void* buffer, size_t& count, size_t needed) {
  if (needed == 0 || (buffer && count >= needed)) return true;
  count = needed;
  return false;
}

attendre_status too_small(const char* what, size_t needed) {
  return failure(ATTENDRE_ERROR_BUFFER_TOO_SMALL,
                 std::string(what) + ": the buffer is too small, " + std::to_string(needed) + " needed");
}

Outcome room(const void* buffer, size_t* count, size_t needed, const char* what) {
  ATTENDRE_C_NEED(count, std::string(what) + " count");
  if (!fits(buffer, *count, needed)) return too_small(what, needed);
  return ATTENDRE_OK;
}

Outcome copy_text(std::string_view text, char* buffer, size_t* count, const char* what) {
  ATTENDRE_C_TRY(room(buffer, count, text.size() + 1, what));
  std::copy(text.begin(), text.end(), buffer);
  buffer[text.size()] = '\0';
  *count = text.size() + 1;
  return ATTENDRE_OK;
}

}  // namespace attendre::capi

using namespace attendre::capi;

extern "C" {

uint32_t attendre_version(void) { return ATTENDRE_API_VERSION; }

const char* attendre_version_string(void) { return ATTENDRE_VERSION_STRING; }

const char* attendre_status_name(attendre_status status) {
  switch (status) {
    case ATTENDRE_OK: return "ok";
    case ATTENDRE_ERROR_INVALID_ARGUMENT: return "invalid_argument";
    case ATTENDRE_ERROR_INFEASIBLE_CONFIG: return "infeasible_config";
    case ATTENDRE_ERROR_UNSUPPORTED: return "unsupported";
    case ATTENDRE_ERROR_OUT_OF_DEVICE_MEMORY: return "out_of_device_memory";
    case ATTENDRE_ERROR_OUT_OF_HOST_MEMORY: return "out_of_host_memory";
    case ATTENDRE_ERROR_DEVICE_LOST: return "device_lost";
    case ATTENDRE_ERROR_VULKAN: return "vulkan_error";
    case ATTENDRE_ERROR_IO: return "io_error";
    case ATTENDRE_ERROR_MALFORMED_INPUT: return "malformed_input";
    case ATTENDRE_ERROR_NUMERICAL: return "numerical_error";
    case ATTENDRE_ERROR_BUFFER_TOO_SMALL: return "buffer_too_small";
    case ATTENDRE_ERROR_INTERNAL: return "internal";
  }
  return "unknown";
}

const char* attendre_last_error(void) { return last_message.c_str(); }

}  // extern "C"
