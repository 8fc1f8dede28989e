// Errors raised by attendre. Every failure the library can detect surfaces as
// one attendre::Error carrying a code and a one-line message naming the problem.
#pragma once

#include <stdexcept>
#include <string>

namespace attendre {

enum class ErrorCode {
  invalid_argument,      // a value outside its documented domain
  infeasible_config,     // a configuration whose eviction cannot be satisfied
  unsupported,           // the device lacks a required feature or limit
  out_of_device_memory,  // VK_ERROR_OUT_OF_DEVICE_MEMORY or an allocation past a limit
  out_of_host_memory,
  device_lost,           // VK_ERROR_DEVICE_LOST: the context is unusable afterwards
  vulkan_error,          // any other Vulkan failure
  io_error,              // a file could not be opened, read or written
  malformed_input,       // a file or buffer whose content breaks its format
  numerical_error,       // the device computed NaN or infinity (named step and stage)
};

const char* to_string(ErrorCode code);

class Error : public std::runtime_error {
 public:
  Error(ErrorCode code, const std::string& message) : std::runtime_error(message), code_(code) {}
  ErrorCode code() const { return code_; }

 private:
  ErrorCode code_;
};

}  // namespace attendre
