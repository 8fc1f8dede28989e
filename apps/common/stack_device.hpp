// Where the model tools run their stack: the GPU (a Vulkan context on the
// device ATTENDRE_DEVICE selects) or the float64 CPU reference (slow, needs
// no GPU, decodes every GGUF encoding).
#pragma once

#include "arguments.hpp"

#include <attendre/context.hpp>
#include <attendre/encoder_decoder.hpp>
#include <attendre/stack.hpp>

#include <memory>
#include <string>

namespace attendre::cli {

enum class Device { cpu, gpu };

// --device cpu|gpu into `target`.
Option device_option(Device& target);

// --verbose: the kernel variant of each family and the driver quirks on
// stderr, one "<tool>: family: variant (reason)" line each.
void report_variants(const std::string& tool, const Context& context);

class StackDevice {
 public:
  explicit StackDevice(Device device);
  ~StackDevice();

  // A stack on this device; the peak below restarts with it.
  std::unique_ptr<TransformerStack> make_stack(const StackConfig& config, WeightSource& weights);
  // The same for an encoder-decoder (T5).
  std::unique_ptr<EncoderDecoder> make_encoder_decoder(const EncoderDecoderConfig& config, WeightSource& weights);
  // "gpu (llvmpipe ...)" or "cpu (float64 reference)".
  std::string name() const;
  // The most device memory held since the last make_stack() or make_encoder_decoder() (0 on the cpu):
  // the stack, the staging its weights went through, and what it runs with.
  uint64_t peak_bytes() const;
  // Reports every Vulkan validation message, and returns 3 when there were
  // any (the tools' exit status for them), else 0.
  int validation_status(const std::string& tool) const;
  // report_variants() on the gpu; nothing on the cpu.
  void report_variants(const std::string& tool) const;

 private:
  std::unique_ptr<Context> context_;  // gpu only
};

}  // namespace attendre::cli
