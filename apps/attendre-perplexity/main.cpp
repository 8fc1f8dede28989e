// attendre-perplexity: the perplexity of a long text under a GGUF model's
// stack with bounded memories (causal: the logits at t predict token t+1),
// for one memory setting or, with --compare, several side by side.
// Exit status: 0 success, 1 bad file or configuration or runtime error,
// 2 command-line error, 3 Vulkan validation messages.
#include "memory_json.hpp"
#include "memory_options.hpp"
#include "output_files.hpp"
#include "stack_device.hpp"

#include <attendre/error.hpp>
#include <attendre/model.hpp>
#include <attendre/perplexity.hpp>

#include <chrono>
#include <cstdio>
#include <iostream>
#include <sstream>
#include <unistd.h>

namespace {

using namespace attendre;
constexpr const char* kTool = "attendre-perplexity";

struct Options {
  std::string model, file, json;
  std::vector<cli::NamedSetting> compare;
  cli::MemoryOptions memory;
  cli::Device device = cli::Device::gpu;
  bool verbose = false;
  bool help = false;
};

std::string help_text() {
  return std::string(R"(usage: attendre-perplexity --model FILE.gguf --file TEXT [memory options] [--json OUT.json]
    [--compare full,fifo,sinks,lra_sum,lfa] [--device cpu|gpu] [--verbose]

Streams a text through the model's ATTENDRE stack, causal (the logits at position t predict token
t+1), and prints its perplexity, tokens per second and peak GPU memory, with a progress line on stderr.
With --compare the other memory options apply to every setting. --no-causal is refused.

  --model FILE.gguf     a llama or qwen2 GGUF model
  --file TEXT           the text (UTF-8), tokenized with BOS as the vocabulary says
  --compare LIST        one table row per setting: full (--full-context, no other memory option applies), a policy or an alias: sinks or streamingllm (fifo, --sinks or 4), tova (lra_last), h2o (lfa, lambda 0, --recent or W = (M - sinks) / 2)
  --json OUT.json       writes the results (perplexity, mean_nll, tokens_per_s, peak_gpu_bytes per setting)
  --device cpu|gpu      gpu (default): Vulkan; cpu: the float64 reference (slow, any GGUF encoding)
  --help, -h            this text
)") + cli::MemoryOptions::help() +
         R"(
environment: ATTENDRE_DEVICE (index or name of the Vulkan device), ATTENDRE_VALIDATION=1.
exit status: 0 success; 1 bad file, configuration or runtime error; 2 command-line error;
3 Vulkan validation messages. --json appears only when the whole run succeeds.
)";
}

Options parse(std::span<const std::string> args) {
  Options o;
  cli::OptionTable table = {
      {"--model", cli::path_option(o.model)},
      {"--file", cli::path_option(o.file)},
      {"--json", cli::path_option(o.json)},
      {"--compare", {true, false, [&o](const std::string& f, const std::string& v) {
                       std::stringstream names(v);
                       for (std::string name; std::getline(names, name, ',');) o.compare.push_back(cli::parse_setting(f, name));
                       if (o.compare.empty()) cli::usage(f + ": expected a list of settings, got '" + v + "'");
                     }}},
      {"--device", cli::device_option(o.device)},
      {"--verbose", cli::switch_option(o.verbose, true)},
      {"--help", cli::switch_option(o.help, true)},
  };
  o.memory.add_to(table);
  const std::set<std::string> seen = cli::parse_options(table, args);
  if (o.help) return o;
  for (const char* required : {"--model", "--file"})
    if (!seen.count(required)) cli::usage(std::string("missing required option ") + required);
  o.memory.check(seen, true, !o.compare.empty());
  if (seen.count("--full-context") && !o.compare.empty()) cli::usage("--full-context and --compare are exclusive: name full in --compare");
  return o;
}

struct Row {
  std::string setting;
  PerplexityResult result;
  uint64_t peak_bytes = 0;
  nlohmann::json memory;
};

// One line on stderr that follows the run: rewritten in place on a
// terminal; elsewhere (a log) a plain line every 30 seconds of a long
// setting, and one at its end.
class Progress {
 public:
  explicit Progress(std::string setting) : setting_(std::move(setting)), terminal_(::isatty(2) != 0) {}
  void update(uint64_t scored, uint64_t total, double perplexity) {
    const auto now = std::chrono::steady_clock::now();
    if (now - last_ < (terminal_ ? std::chrono::milliseconds(200) : std::chrono::milliseconds(30'000))) return;
    const bool first = last_ == std::chrono::steady_clock::time_point{};
    last_ = now;
    if (!terminal_ && first) return;  // a log's clock starts at the first update: short settings stay one line
    std::fprintf(stderr, "%s[%s] %llu/%llu tokens scored, perplexity %.4f%s", terminal_ ? "\r" : "", setting_.c_str(),
                 static_cast<unsigned long long>(scored), static_cast<unsigned long long>(total), perplexity,
                 terminal_ ? "" : "\n");
  }
  void done(const PerplexityResult& r) const {
    std::fprintf(stderr, "%s[%s] %llu/%llu tokens scored, perplexity %.4f, %.1f tokens/s\n", terminal_ ? "\r" : "",
                 setting_.c_str(), static_cast<unsigned long long>(r.predicted),
                 static_cast<unsigned long long>(r.predicted), r.perplexity, r.tokens_per_s());
  }

 private:
  std::string setting_;
  bool terminal_;
  std::chrono::steady_clock::time_point last_{};
};

// A single run's name in the table: its policy (block 0's), "+sinks" with sinks.
std::string setting_name(const StackConfig& config) {
  const KvMemoryConfig& kv = config.blocks[0].attention.kv;
  return std::string(to_string(kv.policy.kind)) + (kv.n_sink ? "+sinks" : "");
}

void print_table(const std::vector<Row>& rows) {
  std::printf("%-14s %12s %12s %12s\n", "setting", "perplexity", "tokens/s", "GPU MiB");
  for (const Row& r : rows)
    std::printf("%-14s %12.4f %12.1f %12.2f\n", r.setting.c_str(), r.result.perplexity, r.result.tokens_per_s(),
                static_cast<double>(r.peak_bytes) / (1 << 20));
}

int run(std::span<const std::string> args) {
  const Options o = parse(args);
  if (o.help) {
    std::cout << help_text();
    return 0;
  }
  cli::OutputFiles outputs;  // staged first: an unwritable path fails before any work
  if (!o.json.empty()) outputs.stage("--json", o.json);
  Model model = Model::open(o.model);
  if (model.info().kind != ModelKind::decoder)
    throw Error(ErrorCode::invalid_argument, o.model + ": " + model.info().architecture +
                                                 " is not a decoder: perplexity scores a causal stack's next tokens");
  const std::vector<uint32_t> tokens = model.tokenizer().encode(cli::read_text_file("--file", o.file));
  if (tokens.size() < 2)
    throw Error(ErrorCode::invalid_argument, "--file " + o.file + ": " + std::to_string(tokens.size()) +
                                                 " tokens, perplexity needs at least 2");

  std::vector<std::optional<cli::NamedSetting>> settings(o.compare.begin(), o.compare.end());
  if (settings.empty()) settings.emplace_back(std::nullopt);
  cli::StackDevice device(o.device);
  if (o.verbose) device.report_variants("attendre-perplexity");
  std::vector<Row> rows;
  for (const std::optional<cli::NamedSetting>& named : settings) {
    const StackConfig config = o.memory.stack_config(model, tokens.size(), named);
    Row row;
    row.setting = named ? named->name : o.memory.full_context() ? "full" : setting_name(config);
    row.memory = cli::memory_json(config, o.memory.flush());
    Progress progress(row.setting);
    {
      const std::unique_ptr<TransformerStack> stack = device.make_stack(config, model.weights());
      row.result = perplexity(*stack, tokens, o.memory.flush(),
                              [&](uint64_t scored, uint64_t total, double p) { progress.update(scored, total, p); });
    }
    row.peak_bytes = device.peak_bytes();
    progress.done(row.result);
    rows.push_back(std::move(row));
  }
  if (const int status = device.validation_status(kTool)) return status;

  print_table(rows);
  if (!o.json.empty()) {
    nlohmann::json results = nlohmann::json::array();
    for (const Row& r : rows)
      results.push_back({{"setting", r.setting},
                         {"perplexity", r.result.perplexity},
                         {"mean_nll", r.result.mean_nll},
                         {"tokens_per_s", r.result.tokens_per_s()},
                         {"seconds", r.result.seconds},
                         {"peak_gpu_bytes", r.peak_bytes},
                         {"memory", r.memory}});
    const nlohmann::json json = {{"model", o.model},           {"device", device.name()},
                                 {"tokens", tokens.size()},     {"predicted", rows.front().result.predicted},
                                 {"perplexity", rows.front().result.perplexity}, {"results", results}};
    outputs.write_text(o.json, json.dump(2) + "\n");
  }
  outputs.commit();
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return cli::run_main(kTool, argc, argv, run); }
