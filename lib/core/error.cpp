#include "core/fail.hpp"

#include <attendre/error.hpp>

namespace attendre {

const char* to_string(ErrorCode code) {
  switch (code) {
    case ErrorCode::invalid_argument: return "invalid argument";
    case ErrorCode::infeasible_config: return "infeasible configuration";
    case ErrorCode::unsupported: return "unsupported";
    case ErrorCode::out_of_device_memory: return "out of device memory";
    case ErrorCode::out_of_host_memory: return "out of host memory";
    case ErrorCode::device_lost: return "device lost";
    case ErrorCode::vulkan_error: return "vulkan error";
    case ErrorCode::io_error: return "i/o error";
    case ErrorCode::malformed_input: return "malformed input";
    case ErrorCode::numerical_error: return "numerical error";
  }
  return "unknown error";
}

#if defined(__cpp_exceptions)
void fail(ErrorCode code, const std::string& message) { throw Error(code, message); }
#endif

}  // namespace attendre
