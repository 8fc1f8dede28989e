// attendre-generate: streams a prompt through a GGUF model's stack (or a
// T5's encoder), drains it, then generates (greedy, or temperature and top-p with a seeded
// sampler) until EOS or the budget, printing the continuation as it grows.
// Exit status: 0 success, 1 bad file or configuration or runtime error,
// 2 command-line error, 3 Vulkan validation messages.
#include "continuation.hpp"
#include "memory_json.hpp"
#include "memory_options.hpp"
#include "output_files.hpp"
#include "stack_device.hpp"

#include "core/number_text.hpp"
#include "npy/npy.hpp"
#include <attendre/error.hpp>
#include <attendre/generate.hpp>
#include <attendre/gpu_stack.hpp>

#include <algorithm>
#include <map>
#include <attendre/model.hpp>

#include <cstdio>
#include <iostream>

namespace {

using namespace attendre;
constexpr const char* kTool = "attendre-generate";

struct Options {
  std::string model, prompt, prompt_file, logits, json;
  uint32_t max_tokens = 128;
  SamplingOptions sampling;
  cli::MemoryOptions memory;
  cli::Device device = cli::Device::gpu;
  bool verbose = false;
  bool dispatches = false;
  bool help = false;
};

std::string help_text() {
  return std::string(R"(usage: attendre-generate --model FILE.gguf (--prompt STR | --prompt-file PATH) [--max-tokens N]
    [--temperature T] [--top-p P] [--seed S] [memory options] [--logits OUT.npy] [--json OUT.json]
    [--device cpu|gpu] [--verbose]

Streams the prompt (BOS as the vocabulary says) through the model's ATTENDRE stack, drains it, then
generates token by token, each new key inserted under its block's policy; prints the continuation.

  --model FILE.gguf     a llama, qwen2, qwen3, phi3, gemma2, gemma3 or t5 GGUF model (t5: the prompt is
                        the encoder's input, the decoder starts from its start token; the memory options
                        set the encoder; gemma: its local blocks keep their sliding windows unless
                        --layer overrides them)
  --prompt STR          the prompt text (UTF-8)
  --prompt-file PATH    the prompt, read from a file
  --max-tokens N        the most tokens to generate (default 128); EOS ends sooner
  --temperature T       0 (default): greedy; else sample from softmax(logits / T)
  --top-p P             sample among the most likely tokens holding probability P (default 1)
  --seed S              the sampler's seed (default 0): the same tokens on every platform
  --logits OUT.npy      writes float32 [prompt tokens, vocab]: the logits at every prompt position
  --json OUT.json       writes prompt_ids, generated_ids, text, throughputs and peak_gpu_bytes; on the
                        gpu, decode_step: the last decode step's submits, dispatches, barriers,
                        copies, host_ms (planning, recording, submitting) and wait_ms (for the device)
  --device cpu|gpu      gpu (default): Vulkan; cpu: the float64 reference (slow, any GGUF encoding)
  --verbose             the kernel variant of each family and the driver quirks on stderr
  --dispatches          on the gpu: GPU timestamps around every dispatch (slows the run); the last
                        decode step's milliseconds per kernel on stderr and in the JSON's
                        decode_step.kernels (name, ms, dispatches), longest first
  --help, -h            this text
)") + cli::MemoryOptions::help() +
         R"(
environment: ATTENDRE_DEVICE (index or name of the Vulkan device), ATTENDRE_VALIDATION=1.
exit status: 0 success; 1 bad file, configuration or runtime error; 2 command-line error;
3 Vulkan validation messages. --logits and --json appear only when the whole run succeeds.
)";
}

Options parse(std::span<const std::string> args) {
  Options o;
  auto number = [](double& target, bool non_negative) {
    return cli::Option{true, false, [&target, non_negative](const std::string& f, const std::string& v) {
                         target = cli::parse_number(f, v, non_negative);
                       }};
  };
  cli::OptionTable table = {
      {"--model", cli::path_option(o.model)},
      {"--prompt", cli::text_option(o.prompt)},
      {"--prompt-file", cli::path_option(o.prompt_file)},
      {"--max-tokens", cli::count_option(o.max_tokens, true)},
      {"--temperature", number(o.sampling.temperature, true)},
      {"--top-p", number(o.sampling.top_p, false)},
      {"--seed", {true, false, [&o](const std::string& f, const std::string& v) { o.sampling.seed = cli::parse_u64(f, v); }}},
      {"--logits", cli::path_option(o.logits)},
      {"--json", cli::path_option(o.json)},
      {"--device", cli::device_option(o.device)},
      {"--verbose", cli::switch_option(o.verbose, true)},
      {"--dispatches", cli::switch_option(o.dispatches, true)},
      {"--help", cli::switch_option(o.help, true)},
  };
  o.memory.add_to(table);
  const std::set<std::string> seen = cli::parse_options(table, args);
  if (o.help) return o;
  if (!seen.count("--model")) cli::usage("missing required option --model");
  if (seen.count("--prompt") + seen.count("--prompt-file") != 1) cli::usage("give exactly one of --prompt and --prompt-file");
  if (!(o.sampling.top_p > 0.0 && o.sampling.top_p <= 1.0))
    cli::usage("--top-p: expected a number in (0, 1], got " + shortest_text(o.sampling.top_p));
  if (o.sampling.temperature == 0.0 && (seen.count("--top-p") || seen.count("--seed")))
    cli::usage("--top-p and --seed apply to sampling: give --temperature > 0");
  o.memory.check(seen, false, false);
  return o;
}

// A step's dispatches summed per kernel, longest total first, also on stderr.
nlohmann::json kernel_totals(const std::vector<KernelTime>& profile) {
  std::map<std::string, std::pair<double, uint32_t>> totals;  // kernel -> (ns, dispatches)
  for (const KernelTime& k : profile) {
    totals[k.kernel].first += k.ns;
    ++totals[k.kernel].second;
  }
  std::vector<std::pair<std::string, std::pair<double, uint32_t>>> sorted(totals.begin(), totals.end());
  std::stable_sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) { return a.second.first > b.second.first; });
  double all = 0.0;
  for (const auto& [name, t] : sorted) all += t.first;
  nlohmann::json kernels = nlohmann::json::array();
  for (const auto& [name, t] : sorted) {
    kernels.push_back({{"name", name}, {"ms", t.first / 1e6}, {"dispatches", t.second}});
    std::fprintf(stderr, "%s: decode step: %-36s %9.3f ms %5.1f %% (%u dispatches)\n", kTool, name.c_str(), t.first / 1e6,
                 all > 0.0 ? 100.0 * t.first / all : 0.0, t.second);
  }
  return kernels;
}

int run(std::span<const std::string> args) {
  const Options o = parse(args);
  if (o.help) {
    std::cout << help_text();
    return 0;
  }
  cli::OutputFiles outputs;  // staged first: an unwritable path fails before any work
  const auto logits_file = o.logits.empty() ? std::filesystem::path() : outputs.stage("--logits", o.logits);
  if (!o.json.empty()) outputs.stage("--json", o.json);

  Model model = Model::open(o.model).value_or_throw();
  const ModelInfo& info = model.info();
  if (info.kind == ModelKind::encoder)
    throw Error(ErrorCode::invalid_argument, o.model + ": " + info.architecture + " is an encoder alone: it generates no tokens");
  const bool encoder_decoder = info.kind == ModelKind::encoder_decoder;
  // An encoder emits no logits and drains its input (generate() for encoder-decoders).
  if (encoder_decoder && !o.logits.empty())
    cli::usage("--logits: " + info.architecture + "'s encoder emits no logits for the input");
  if (encoder_decoder && o.memory.flush()) cli::usage("--flush: " + info.architecture + "'s encoder drains its input");
  const std::string prompt_text = o.prompt_file.empty() ? o.prompt : cli::read_text_file("--prompt-file", o.prompt_file);
  const std::vector<uint32_t> prompt = model.tokenizer().encode(prompt_text).value_or_throw();
  if (prompt.empty()) throw Error(ErrorCode::invalid_argument, "the prompt has no tokens (and the vocabulary adds no BOS)");

  GenerateOptions g;
  g.max_tokens = o.max_tokens;
  g.sampling = o.sampling;
  g.stop_tokens = model.tokenizer().stop_tokens();
  g.flush = o.memory.flush();
  g.prompt_logits = !o.logits.empty();
  cli::StackDevice device(o.device);
  if (o.verbose) device.report_variants("attendre-generate");
  // A decoder continues the prompt; T5's decoder writes a text of its own.
  generate_tool::Continuation continuation(model.tokenizer(), encoder_decoder ? std::vector<uint32_t>{} : prompt);
  const auto stream = [&](uint32_t token) { std::cout << continuation.add(token) << std::flush; };
  GenerateResult result;
  nlohmann::json memory, decode_step;
  uint32_t vocab = 0;
  if (encoder_decoder) {
    // The decoder's self-attention keeps its start token and every token it feeds back.
    const EncoderDecoderConfig config = o.memory.encoder_decoder_config(model, prompt.size(), std::max(o.max_tokens, 1u));
    memory = {{"encoder", cli::memory_json(config.encoder, false)},
              {"encoder_memory", config.encoder_memory},
              {"decoder", cli::memory_json(config.decoder, false)}};
    // Destroyed before the validation check: teardown can raise messages too.
    const std::unique_ptr<EncoderDecoder> stacks = device.make_encoder_decoder(config, model.weights());
    result = generate(*stacks, prompt, *info.decoder_start_token, g, stream).value_or_throw();
  } else {
    const StackConfig config = o.memory.stack_config(model, prompt.size() + o.max_tokens);
    memory = cli::memory_json(config, g.flush);
    vocab = config.vocab;
    const std::unique_ptr<TransformerStack> stack = device.make_stack(config, model.weights());
    auto* profiled = o.dispatches ? dynamic_cast<gpu::Stack*>(stack.get()) : nullptr;
    if (profiled) profiled->set_profiling(true).or_throw();
    result = generate(*stack, prompt, g, stream).value_or_throw();
    // Each generated token but the last fed back through one decode step
    // (the token that stopped generation too): the last of them is profiled.
    const size_t decoded = result.stopped ? result.tokens.size() : std::max<size_t>(result.tokens.size(), 1) - 1;
    if (const auto* gpu_stack = dynamic_cast<const gpu::Stack*>(stack.get()); gpu_stack && decoded > 0) {
      const gpu::Stack::Recorded r = gpu_stack->last_recorded();
      decode_step = {{"submits", r.submits}, {"dispatches", r.dispatches}, {"barriers", r.barriers},
                     {"copies", r.copies},   {"host_ms", r.host_ms},       {"wait_ms", r.wait_ms}};
      if (profiled) decode_step["kernels"] = kernel_totals(profiled->last_profile().value_or_throw());
    }
  }
  std::cout << std::endl;
  if (const int status = device.validation_status(kTool)) return status;

  if (!o.logits.empty()) {
    const int64_t shape[] = {static_cast<int64_t>(prompt.size()), vocab};
    npy::write<float>(logits_file, shape, result.prompt_logits);
  }
  if (!o.json.empty()) {
    nlohmann::json json = {
        {"model", o.model},
        {"device", device.name()},
        {"prompt_ids", prompt},
        {"generated_ids", result.tokens},
        {"text", continuation.text()},
        {"stop_reason", result.stopped ? "eos" : "budget"},
        {"read_tokens_per_s", result.read_tokens_per_s()},
        {"generate_tokens_per_s", result.generate_tokens_per_s()},
        {"read_seconds", result.read_seconds},
        {"generate_seconds", result.generate_seconds},
        {"peak_gpu_bytes", device.peak_bytes()},
        {"sampling", {{"temperature", o.sampling.temperature}, {"top_p", o.sampling.top_p}, {"seed", o.sampling.seed}}},
        {"memory", memory},
    };
    if (!decode_step.is_null()) json["decode_step"] = decode_step;
    // Invalid UTF-8 (a generation cut inside a character) is written as U+FFFD, never refused.
    outputs.write_text(o.json, json.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
  }
  outputs.commit();
  std::fprintf(stderr, "read %zu prompt tokens at %.1f tokens/s, generated %zu at %.1f tokens/s (%s), peak GPU memory %.2f MiB, %s\n",
               prompt.size(), result.read_tokens_per_s(), result.tokens.size(), result.generate_tokens_per_s(),
               result.stopped ? "EOS" : "budget", static_cast<double>(device.peak_bytes()) / (1 << 20), device.name().c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return cli::run_main(kTool, argc, argv, run); }
