// attendre-perplexity: the perplexity of a long text under a GGUF model's
// stack with bounded memories (causal: the logits at t predict token t+1),
// for one memory setting or, with --compare, several side by side; with
// --ctx N over llama-perplexity's windows, and --kl-divergence from the
// full context's distributions (the library's windowed_perplexity()).
// Exit status: 0 success, 1 bad file or configuration or runtime error,
// 2 command-line error, 3 Vulkan validation messages.
#include "memory_json.hpp"
#include "memory_options.hpp"
#include "output_files.hpp"
#include "stack_device.hpp"

#include <attendre/error.hpp>
#include <attendre/model.hpp>
#include <attendre/perplexity.hpp>

#include <algorithm>
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
  std::optional<uint32_t> ctx;  // --ctx: llama-perplexity's windows
  bool kl_divergence = false;
  bool verbose = false;
  bool help = false;
};

std::string help_text() {
  return std::string(R"(usage: attendre-perplexity --model FILE.gguf --file TEXT [memory options] [--json OUT.json]
    [--compare full,fifo,sinks,lra_sum,lfa] [--ctx N [--kl-divergence]] [--device cpu|gpu] [--verbose]

Streams a text through the model's ATTENDRE stack, causal (the logits at position t predict token
t+1), and prints its perplexity, tokens per second and peak GPU memory, with a progress line on stderr.
With --compare the other memory options apply to every setting. --no-causal is refused.
With --ctx N, llama-perplexity's perplexity: the tokens cut into tokens/N consecutive windows of N
(at least 2N tokens), each window read from an empty memory (the memory options apply inside it) with
its first token replaced by BOS where the vocabulary adds one, and only its second half scored
(positions N/2 .. N-2 predict the next token); every setting reads the same windows.

  --model FILE.gguf     a llama or qwen2 GGUF model
  --file TEXT           the text (UTF-8), tokenized with BOS as the vocabulary says
  --compare LIST        one table row per setting: full (--full-context, no other memory option applies), a policy or an alias: sinks or streamingllm (fifo, --sinks or 4), tova (lra_last), h2o (lfa, lambda 0, --recent or W = (M - sinks) / 2)
  --json OUT.json       writes the results (perplexity, mean_nll, tokens_per_s, peak_gpu_bytes per setting;
                        with --ctx also ctx and windows, and kl_divergence per setting)
  --ctx N               windows of N tokens (N >= 3), as llama-perplexity's -c N
  --kl-divergence       with --ctx: per setting, the KL divergence of its next-token distribution from the
                        full context's over the scored tokens (mean, median, 99th percentile, ... as
                        llama-perplexity --kl-divergence reports them) and the share of tokens whose most
                        likely token is full's ("same top p"); full runs too where --compare lacks it
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
      {"--ctx", {true, false, [&o](const std::string& f, const std::string& v) {
                   o.ctx = cli::parse_count(f, v, true);
                   if (*o.ctx < 3) cli::usage(f + ": " + v + " scores no token (N - 1 - N/2 per window): at least 3");
                 }}},
      {"--kl-divergence", cli::switch_option(o.kl_divergence, true)},
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
  if (o.kl_divergence && !o.ctx) cli::usage("--kl-divergence needs --ctx N: the KL divergence is taken over the windows' scored tokens");
  return o;
}

struct Row {
  std::string setting;
  PerplexityResult result;
  uint64_t peak_bytes = 0;
  nlohmann::json memory;
  std::optional<KlDivergenceStats> kl;  // --kl-divergence
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
  const bool kl = rows.front().kl.has_value();
  std::printf("%-14s %12s %12s %12s", "setting", "perplexity", "tokens/s", "GPU MiB");
  if (kl) std::printf(" %12s %12s %12s %11s", "mean KLD", "median KLD", "99.0% KLD", "same top p");
  std::printf("\n");
  for (const Row& r : rows) {
    std::printf("%-14s %12.4f %12.1f %12.2f", r.setting.c_str(), r.result.perplexity, r.result.tokens_per_s(),
                static_cast<double>(r.peak_bytes) / (1 << 20));
    if (kl) std::printf(" %12.6f %12.6f %12.6f %10.3f%%", r.kl->mean, r.kl->median, r.kl->p99, 100.0 * r.kl->same_top_p);
    std::printf("\n");
  }
}

nlohmann::json kl_json(const KlDivergenceStats& kl) {
  return {{"tokens", kl.count},        {"mean", kl.mean},     {"mean_uncertainty", kl.mean_uncertainty},
          {"median", kl.median},       {"p90", kl.p90},       {"p95", kl.p95},
          {"p99", kl.p99},             {"p99_9", kl.p99_9},   {"maximum", kl.maximum},
          {"minimum", kl.minimum},     {"same_top_p", kl.same_top_p}};
}

using Settings = std::vector<std::optional<cli::NamedSetting>>;

// Whether `named` (nullopt: the memory options alone) is the full context.
bool is_full(const std::optional<cli::NamedSetting>& named, const cli::MemoryOptions& memory) {
  return named ? named->full : memory.full_context();
}

// Each setting over the whole text, one after the other.
std::vector<Row> whole_text(const Options& o, Model& model, std::span<const uint32_t> tokens, const Settings& settings,
                            cli::StackDevice& device) {
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
                              [&](uint64_t scored, uint64_t total, double p) { progress.update(scored, total, p); }).value_or_throw();
    }
    row.peak_bytes = device.peak_bytes();
    progress.done(row.result);
    rows.push_back(std::move(row));
  }
  return rows;
}

// Every setting over llama-perplexity's windows of --ctx tokens, each
// window from a fresh stack; the peak GPU memory is each setting's largest.
std::vector<Row> windowed(const Options& o, Model& model, std::span<const uint32_t> tokens, const Settings& settings,
                          cli::StackDevice& device) {
  PerplexityWindows w;
  w.ctx = *o.ctx;
  w.flush = o.memory.flush();
  if (model.tokenizer().adds_bos()) w.bos = model.tokenizer().bos();
  std::vector<StackConfig> configs;
  std::vector<Row> rows;
  std::vector<Progress> progress;
  for (size_t s = 0; s < settings.size(); ++s) {
    configs.push_back(o.memory.stack_config(model, w.ctx, settings[s]));
    Row row;
    row.setting = settings[s] ? settings[s]->name : o.memory.full_context() ? "full" : setting_name(configs.back());
    row.memory = cli::memory_json(configs.back(), w.flush);
    if (o.kl_divergence && !w.kl_base && is_full(settings[s], o.memory)) w.kl_base = s;
    progress.emplace_back(row.setting);
    rows.push_back(std::move(row));
  }
  const StackMaker make = [&](size_t s) -> Result<std::unique_ptr<TransformerStack>> {
    try {
      return device.make_stack(configs[s], model.weights());
    } catch (const Error& e) {
      return Status(e.code(), e.what());
    }
  };
  const std::vector<WindowedPerplexityResult> results =
      windowed_perplexity(settings.size(), make, tokens, w, [&](size_t s, uint64_t, uint64_t windows, const PerplexityResult& r) {
        rows[s].peak_bytes = std::max(rows[s].peak_bytes, device.peak_bytes());
        progress[s].update(r.predicted, windows * w.scored_per_window(), r.perplexity);
      }).value_or_throw();
  for (size_t s = 0; s < settings.size(); ++s) {
    rows[s].result = results[s].perplexity;
    rows[s].kl = results[s].kl;
    progress[s].done(rows[s].result);
  }
  return rows;
}

int run(std::span<const std::string> args) {
  const Options o = parse(args);
  if (o.help) {
    std::cout << help_text();
    return 0;
  }
  cli::OutputFiles outputs;  // staged first: an unwritable path fails before any work
  if (!o.json.empty()) outputs.stage("--json", o.json);
  Model model = Model::open(o.model).value_or_throw();
  if (model.info().kind != ModelKind::decoder)
    throw Error(ErrorCode::invalid_argument, o.model + ": " + model.info().architecture +
                                                 " is not a decoder: perplexity scores a causal stack's next tokens");
  const std::vector<uint32_t> tokens = model.tokenizer().encode(cli::read_text_file("--file", o.file)).value_or_throw();
  if (tokens.size() < 2)
    throw Error(ErrorCode::invalid_argument, "--file " + o.file + ": " + std::to_string(tokens.size()) +
                                                 " tokens, perplexity needs at least 2");
  if (o.ctx && tokens.size() < 2 * uint64_t{*o.ctx})
    throw Error(ErrorCode::invalid_argument, "--file " + o.file + ": " + std::to_string(tokens.size()) +
                                                 " tokens, --ctx " + std::to_string(*o.ctx) + " needs at least " +
                                                 std::to_string(2 * uint64_t{*o.ctx}) + " (two windows)");

  Settings settings(o.compare.begin(), o.compare.end());
  if (settings.empty()) settings.emplace_back(std::nullopt);
  // --kl-divergence measures from the full context: it runs as a row of its own where no setting is it.
  if (o.kl_divergence && std::none_of(settings.begin(), settings.end(), [&](const auto& s) { return is_full(s, o.memory); }))
    settings.emplace_back(cli::parse_setting("--compare", "full"));
  cli::StackDevice device(o.device);
  if (o.verbose) device.report_variants("attendre-perplexity");
  const std::vector<Row> rows =
      o.ctx ? windowed(o, model, tokens, settings, device) : whole_text(o, model, tokens, settings, device);
  if (const int status = device.validation_status(kTool)) return status;

  if (o.ctx)
    std::printf("%llu windows of %u tokens (%u scored each)\n",
                static_cast<unsigned long long>(tokens.size() / *o.ctx), *o.ctx, *o.ctx - 1 - *o.ctx / 2);
  print_table(rows);
  if (!o.json.empty()) {
    nlohmann::json results = nlohmann::json::array();
    for (const Row& r : rows) {
      results.push_back({{"setting", r.setting},
                         {"perplexity", r.result.perplexity},
                         {"mean_nll", r.result.mean_nll},
                         {"tokens_per_s", r.result.tokens_per_s()},
                         {"seconds", r.result.seconds},
                         {"peak_gpu_bytes", r.peak_bytes},
                         {"memory", r.memory}});
      if (r.kl) results.back()["kl_divergence"] = kl_json(*r.kl);
    }
    nlohmann::json json = {{"model", o.model},           {"device", device.name()},
                           {"tokens", tokens.size()},     {"predicted", rows.front().result.predicted},
                           {"perplexity", rows.front().result.perplexity}, {"results", results}};
    if (o.ctx) {
      json["ctx"] = *o.ctx;
      json["windows"] = tokens.size() / *o.ctx;
    }
    outputs.write_text(o.json, json.dump(2) + "\n");
  }
  outputs.commit();
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return cli::run_main(kTool, argc, argv, run); }
