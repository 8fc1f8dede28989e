// attendre-reader: reads a document through an ATTENDRE stack, question
// first (paper section 4), and shows what the memory kept. Exit status: 0
// success, 1 input/configuration/device/runtime error, 2 usage error, 3
// validation messages. Errors are one line on stderr, and no --json,
// --report or --export-stream output is left from a failed run.
#include "common/arguments.hpp"
#include "common/human_bytes.hpp"
#include "common/output_files.hpp"
#include "common/output_set.hpp"
#include "common/stack_device.hpp"
#include "core/fail.hpp"
#include "html_report.hpp"
#include "input.hpp"
#include "json_output.hpp"
#include "lexical_model.hpp"
#include "model_backend.hpp"
#include "options.hpp"
#include "passages.hpp"
#include "reading.hpp"
#include "stream_export.hpp"
#include "summary.hpp"
#include "yardstick.hpp"

#include <attendre/context.hpp>
#include <attendre/diagnostics.hpp>
#include <attendre/error.hpp>
#include <attendre/gpu_stack.hpp>

#include <chrono>
#include <cstdio>
#include <iostream>
#include <optional>

namespace {

using namespace reader;
using attendre::ErrorCode;

void report(const std::string& message) { attendre::cli::report("attendre-reader", message); }

using attendre::cli::naming_flags;

// The lexical model, or the GGUF file's (whose errors name the file).
std::unique_ptr<Backend> open_backend(const Options& o) {
  if (!o.model_path) return std::make_unique<LexicalModel>();
  ModelBackendOptions options;
  options.model.weights = o.memory.fp16 ? attendre::WeightType::f16 : attendre::WeightType::f32;
  options.answer_tokens = o.answer_tokens;
  options.lm_infinite = o.lm_infinite;
  return std::make_unique<ModelBackend>(*o.model_path, options);
}

std::unique_ptr<attendre::Context> open_device(const std::string& device) {
  if (device == "cpu") return nullptr;
  attendre::ContextOptions options;
  if (device != "gpu") options.device = device;
  try {
    return attendre::Context::create(options).value_or_throw();
  } catch (const attendre::Error& e) {
    attendre::fail(e.code(), std::string("no usable Vulkan device: ") + e.what() + " (--device cpu reads on the float64 reference)");
  }
}

// Whether the host can compute block 0's queries and keys from the tokens
// alone (the yardstick and --export-stream need them).
bool computes_first_block(const Backend& backend) {
  const attendre::AttentionShape shape = backend.stack_shape().blocks.at(0).attention.shape;
  std::vector<float> q(shape.q_row()), k(shape.kv_row()), v(shape.kv_row());
  return backend.first_block_qkv(Token{}, q, k, v);
}

// A configuration the device cannot hold is refused with both figures
// before anything is allocated.
void check_device_memory(const attendre::Context& device, const attendre::StackConfig& config,
                         attendre::WeightSource& weights) {
  const attendre::gpu::StackMemory plan = naming_flags([&] { return attendre::gpu::plan_stack_memory(config, device.caps(), weights).value_or_throw(); });
  const uint64_t need = plan.total() + plan.load_staging, have = device.caps().device_local_bytes;
  if (have > 0 && need > have)
    attendre::fail(ErrorCode::out_of_device_memory,
                   "the stack needs " + attendre::apps::human_bytes(need) + " of device memory but " + device.caps().name +
                       " has " + attendre::apps::human_bytes(have) + "; lower --kv-capacity, --q-capacity or --chunk");
}

// What the session reads, surveyed: every byte of the input is read and
// checked here, before any device work.
Session survey_session(const Backend& backend, OpenedInput& input, TokenStream& tokenizer, const Options& o) {
  Session s;
  s.backend_kind = backend.kind();
  s.backend_description = backend.description();
  s.block_roles = backend.block_roles();
  s.source = input.source;
  s.source_name = input.source_name;
  s.question = input.question;
  s.template_text = input.template_text;
  s.memory = o.memory;
  s.survey = survey_document(*input.document, tokenizer, input.needles.size());
  s.needles = std::move(input.needles);
  for (size_t i = 0; i < s.needles.size(); ++i) {
    s.needles[i].positions = s.survey.needles[i];
    s.needles[i].depth = static_cast<double>(s.needles[i].positions.first - s.survey.context.first) /
                         static_cast<double>(std::max<int64_t>(1, s.survey.context.size()));
  }
  return s;
}

int run(const Options& o) {
  // Output paths first: a typo in one fails in a moment, not after a read.
  attendre::cli::OutputFiles outputs;
  if (o.json_path) outputs.stage("--json", *o.json_path);
  if (o.report_path) outputs.stage("--report", *o.report_path);
  std::optional<attendre::apps::OutputSet> stream_out;
  if (o.export_dir) stream_out.emplace(*o.export_dir, std::vector<std::string>(kStreamFiles.begin(), kStreamFiles.end()),
                                       "attendre-reader");

  const std::unique_ptr<Backend> backend_owner = open_backend(o);
  Backend& backend = *backend_owner;
  const bool host_first_block = computes_first_block(backend);
  OpenedInput input = open_input(o);
  std::unique_ptr<TokenStream> tokenizer = backend.make_token_stream();
  Session s = survey_session(backend, input, *tokenizer, o);

  std::unique_ptr<attendre::Context> device = open_device(o.device);
  if (device && o.verbose) attendre::cli::report_variants("attendre-reader", *device);
  s.device = device ? device->caps().name : "cpu (float64 reference)";
  s.weights = o.memory.fp16 ? "f16" : "f32";
  std::vector<attendre::StackConfig> configs;
  for (const PolicyList& policies : o.runs) {
    configs.push_back(configure_stack(backend.stack_shape(), o.memory, policies));
    naming_flags([&] { configs.back().check().or_throw(); });
    if (device) check_device_memory(*device, configs.back(), backend.weights());
  }
  s.config = configs.front();
  print_configuration(s, o.runs, stdout);

  const Schedule schedule(s.survey.tokens, s.config.chunk, s.config.blocks[0].attention.q_capacity);
  const attendre::LayerConfig first = s.config.attention(0);
  // The retained mass needs block 0's queries and keys on the host: the
  // lexical model has them, a GGUF model's come only out of the stack.
  std::optional<Yardstick> yardstick;
  if (host_first_block) {
    const auto start = std::chrono::steady_clock::now();
    yardstick.emplace(backend, *input.document, schedule, first.shape, first.scale());
    s.yardstick_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    s.yardstick_queries = yardstick->queries();
  }
  Progress progress(Progress::mode_for_stderr(o.quiet));
  const ReadSetup setup{backend, *input.document, schedule, device.get(), yardstick ? &*yardstick : nullptr, progress,
                        o.runs.size()};
  for (size_t r = 0; r < o.runs.size(); ++r)
    s.runs.push_back(naming_flags([&] { return read_document(setup, configs[r], o.runs[r], r); }));
  for (const RunResult& r : s.runs) s.passages.push_back(group_passages(r.last_block(), s.survey));
  fill_passage_texts(*input.document, *tokenizer, s.passages);

  if (device && device->validation_enabled()) {
    const std::vector<std::string> messages = attendre::validation_messages(*device);
    for (const std::string& m : messages) report("validation: " + m);
    if (!messages.empty()) {
      report(std::to_string(messages.size()) + " Vulkan validation message(s); no output written");
      return 3;
    }
  }
  print_results(s, stdout);
  if (stream_out) export_first_block(backend, *input.document, s.survey.tokens, first.shape, *stream_out);
  if (o.json_path) outputs.write_text(*o.json_path, json_text(s));
  if (o.report_path) outputs.write_text(*o.report_path, html_report(s, *input.document, *tokenizer));
  outputs.commit();
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return attendre::cli::run_main("attendre-reader", argc, argv, [](std::span<const std::string> args) {
    const Options options = parse_options(std::vector<std::string>(args.begin(), args.end()));
    if (options.help) {
      std::cout << help_text();
      return 0;
    }
    return run(options);
  });
}
