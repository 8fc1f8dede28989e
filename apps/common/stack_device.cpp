#include "stack_device.hpp"

#include <attendre/diagnostics.hpp>
#include <attendre/gpu_encoder_decoder.hpp>
#include <attendre/gpu_stack.hpp>
#include <attendre/reference/encoder_decoder.hpp>
#include <attendre/reference/stack.hpp>

namespace attendre::cli {

Option device_option(Device& target) {
  return {true, false, [&target](const std::string& f, const std::string& v) {
            if (v != "cpu" && v != "gpu") usage(f + ": expected cpu or gpu, got '" + v + "'");
            target = v == "cpu" ? Device::cpu : Device::gpu;
          }};
}

void report_variants(const std::string& tool, const Context& context) {
  report(tool, "device " + context.caps().name);
  for (const std::string& line : describe_variants(context)) report(tool, line);
}

void StackDevice::report_variants(const std::string& tool) const {
  if (context_) cli::report_variants(tool, *context_);
}

StackDevice::StackDevice(Device device) {
  if (device == Device::gpu) context_ = Context::create().value_or_throw();
}

StackDevice::~StackDevice() = default;

std::unique_ptr<TransformerStack> StackDevice::make_stack(const StackConfig& config, WeightSource& weights) {
  if (!context_) return std::make_unique<reference::Stack>(config, weights);
  context_->reset_peak_device_memory();
  return gpu::Stack::create(*context_, config, weights).value_or_throw();
}

std::unique_ptr<EncoderDecoder> StackDevice::make_encoder_decoder(const EncoderDecoderConfig& config,
                                                                 WeightSource& weights) {
  if (!context_) return std::make_unique<reference::EncoderDecoder>(config, weights);
  context_->reset_peak_device_memory();
  return gpu::EncoderDecoder::create(*context_, config, weights).value_or_throw();
}

std::string StackDevice::name() const {
  return context_ ? "gpu (" + context_->caps().name + ")" : "cpu (float64 reference)";
}

uint64_t StackDevice::peak_bytes() const { return context_ ? context_->peak_device_memory_bytes() : 0; }

int StackDevice::validation_status(const std::string& tool) const {
  if (!context_ || !context_->validation_enabled()) return 0;
  const std::vector<std::string> messages = validation_messages(*context_);
  for (const std::string& m : messages) report(tool, "validation: " + m);
  if (messages.empty()) return 0;
  report(tool, std::to_string(messages.size()) + " Vulkan validation message(s); no output written");
  return 3;
}

}  // namespace attendre::cli
