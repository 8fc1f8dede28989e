// Compiled with -fno-exceptions (tests/CMakeLists.txt): an application
// without exceptions reads the library's failures as values from these
// public headers. Not run: it only has to compile.
#include <attendre/config.hpp>
#include <attendre/context.hpp>
#include <attendre/embedding.hpp>
#include <attendre/encoder_decoder.hpp>
#include <attendre/generate.hpp>
#include <attendre/gpu.hpp>
#include <attendre/gpu_encoder_decoder.hpp>
#include <attendre/gpu_stack.hpp>
#include <attendre/layer.hpp>
#include <attendre/memory_plan.hpp>
#include <attendre/model.hpp>
#include <attendre/perplexity.hpp>
#include <attendre/reading.hpp>
#include <attendre/stack.hpp>
#include <attendre/status.hpp>
#include <attendre/tensor.hpp>
#include <attendre/tokenizer.hpp>

#include "gguf/gguf.hpp"
#include "gguf/gguf_writer.hpp"
#include "gguf/quant.hpp"
#include "text/tokenizer.hpp"

#if defined(__cpp_exceptions)
#error "this file must be compiled with -fno-exceptions"
#endif

namespace {

[[maybe_unused]] attendre::Status plan_layer(attendre::LayerConfig& config, uint64_t positions) {
  attendre::Result<attendre::MemorySetting> setting = attendre::MemorySetting::full_context(positions, config.chunk);
  if (!setting.ok()) return std::move(setting).status();
  attendre::apply_memory(config, *setting);
  return config.check();
}

// The GGUF reader's failures as values: a key's count, or why there is none.
[[maybe_unused]] attendre::Result<uint64_t> tokens_in(const std::filesystem::path& path) {
  attendre::Result<attendre::gguf::File> file = attendre::gguf::File::open(path);
  if (!file.ok()) return std::move(file).status();
  attendre::Result<attendre::gguf::Value> tokens = file->get("tokenizer.ggml.tokens");
  if (!tokens.ok()) return std::move(tokens).status();
  return tokens->size();
}

// A model's token count for a text, or why there is none.
[[maybe_unused]] attendre::Result<size_t> tokens_of(const std::filesystem::path& path, std::string_view text) {
  attendre::Result<attendre::Model> model = attendre::Model::open(path);
  if (!model.ok()) return std::move(model).status();
  attendre::Result<std::vector<uint32_t>> ids = model->tokenizer().encode(text);
  if (!ids.ok()) return std::move(ids).status();
  return ids->size();
}

// Driving any stack: every step's failure comes back as a value.
[[maybe_unused]] attendre::Result<double> score(attendre::TransformerStack& stack, std::span<const uint32_t> tokens) {
  attendre::Result<attendre::PerplexityResult> scored = attendre::perplexity(stack, tokens);
  if (!scored.ok()) return std::move(scored).status();
  return scored->perplexity;
}

[[maybe_unused]] attendre::Result<std::vector<uint32_t>> continue_text(attendre::TransformerStack& stack,
                                                                       std::span<const uint32_t> prompt) {
  attendre::GenerateOptions options;
  options.max_tokens = 8;
  attendre::Result<attendre::GenerateResult> generated = attendre::generate(stack, prompt, options);
  if (!generated.ok()) return std::move(generated).status();
  return std::move(generated->tokens);
}

// A context without exceptions: the failure comes back as a value.
[[maybe_unused]] attendre::Status open_device(const std::string& name) {
  attendre::ContextOptions options;
  options.device = name;
  attendre::Result<std::unique_ptr<attendre::Context>> context = attendre::Context::create(options);
  if (!context.ok()) return std::move(context).status();
  attendre::Result<std::vector<std::string>> devices = attendre::list_devices();
  return devices.ok() ? attendre::Status{} : std::move(devices).status();
}

// The device layer, stack and encoder-decoder without exceptions: every
// failure (the config, the device's limits, the weights) comes back as a value.
[[maybe_unused]] attendre::Result<size_t> emitted(attendre::Context& context, const attendre::LayerConfig& config,
                                                  const attendre::ChunkView& chunk) {
  attendre::Result<std::unique_ptr<attendre::gpu::Layer>> layer = attendre::gpu::Layer::create(context, config);
  if (!layer.ok()) return std::move(layer).status();
  attendre::Result<attendre::StepResult> step = (*layer)->step(chunk);
  if (!step.ok()) return std::move(step).status();
  return step->emitted_positions.size();
}

[[maybe_unused]] attendre::Result<uint64_t> stack_bytes(attendre::Context& context, const attendre::StackConfig& config,
                                                        attendre::WeightSource& weights) {
  attendre::Result<attendre::gpu::StackLayout> layout = attendre::gpu::plan_stack_layout(config, context.caps(), weights);
  if (!layout.ok()) return std::move(layout).status();
  attendre::Status fits = layout->check(context.caps());
  if (!fits.ok()) return fits;
  attendre::Result<std::unique_ptr<attendre::gpu::Stack>> stack = attendre::gpu::Stack::create(context, config, weights);
  if (!stack.ok()) return std::move(stack).status();
  return (*stack)->memory().total();
}

[[maybe_unused]] attendre::Status encode(attendre::Context& context, const attendre::EncoderDecoderConfig& config,
                                         attendre::WeightSource& weights) {
  attendre::Result<std::unique_ptr<attendre::gpu::EncoderDecoder>> model =
      attendre::gpu::EncoderDecoder::create(context, config, weights);
  if (!model.ok()) return std::move(model).status();
  return (*model)->finish_encoding();
}

}  // namespace
