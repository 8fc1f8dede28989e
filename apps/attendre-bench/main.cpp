// attendre-bench: every ATTENDRE kernel and the whole stack, measured on
// this device against the device's own limits, measured in the same run.
//   1. limits: copy bandwidth and FMA peak (bench_copy.comp, bench_fma.comp)
//   2. the layer kernels over a sweep of shapes (kernels.cpp)
//   3. the stack for named presets, and the block kernels inside it (presets.cpp)
//      and the weight-reading products in every encoding (weights.cpp)
//   4. per-step cost vs document length, bounded vs dense (scaling.cpp)
// then a table on stdout, and optionally JSON (SCHEMA.md) and SVG plots.
#include "json.hpp"
#include "kernels.hpp"
#include "limits.hpp"
#include "options.hpp"
#include "presets.hpp"
#include "scaling.hpp"
#include "svg.hpp"
#include "table.hpp"
#include "weights.hpp"

#include "core/fail.hpp"
#include "output_files.hpp"

#include <attendre/context.hpp>
#include <attendre/diagnostics.hpp>
#include <attendre/error.hpp>

#include <chrono>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <iostream>
#include <string>

namespace {

// Validation messages mean a bug; they must not scroll by unnoticed.
bool report_validation(const attendre::Context& context) {
  if (!context.validation_enabled()) return false;
  const std::vector<std::string> messages = validation_messages(context);
  for (const std::string& m : messages) std::cerr << "validation: " << m << "\n";
  if (!messages.empty()) std::cerr << "attendre-bench: " << messages.size() << " validation message(s)\n";
  return !messages.empty();
}

int run(const bench::Options& options) {
  const auto start = std::chrono::steady_clock::now();
  // Staged before any work, as the other tools do: a path that cannot take
  // its file fails now, not after the whole benchmark.
  attendre::cli::OutputFiles outputs;
  if (!options.json.empty()) outputs.stage("--json", options.json);
  const std::filesystem::path svg(options.svg);
  if (!options.svg.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(svg, ec);
    if (ec) attendre::fail(attendre::ErrorCode::io_error, "--svg " + options.svg + ": cannot create the folder: " + ec.message());
    outputs.stage("--svg", svg / bench::kEfficiencyPlotFile);
    if (options.filter.scaling()) outputs.stage("--svg", svg / bench::kScalingPlotFile);
  }
  attendre::ContextOptions context_options;
  context_options.device = options.device;
  auto context_owner = attendre::Context::create(context_options).value_or_throw();
  attendre::Context& context = *context_owner;

  bench::Results results;
  results.quick = options.quick;
  results.filter = options.filter_text;
  results.device = bench::describe_device(context);
  bench::print_device(stdout, results.device);
  if (options.quick) std::printf("mode:    --quick (few shapes, one small preset, short scaling)\n");
  std::fflush(stdout);

  results.limits = bench::measure_limits(context, options.quick);
  bench::print_limits(stdout, results.limits);
  std::fflush(stdout);

  bench::sweep_layer_kernels(context, options, results);
  bench::run_presets(context, options, results);
  bench::sweep_weight_kernels(context, options, results);
  bench::print_kernels(stdout, results);
  bench::print_presets(stdout, results);
  std::fflush(stdout);

  bench::run_scaling(context, options, results);
  if (results.scaling) bench::print_scaling(stdout, *results.scaling);
  bench::print_skipped(stdout, results);

  results.runtime_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!options.json.empty()) outputs.write_text(options.json, bench::to_json(results));
  if (!options.svg.empty()) {
    outputs.write_text(svg / bench::kEfficiencyPlotFile, bench::efficiency_plot(results));
    if (results.scaling) outputs.write_text(svg / bench::kScalingPlotFile, bench::scaling_plot(*results.scaling));
  }
  outputs.commit();
  std::printf("\nruntime: %.1f s\n", results.runtime_s);
  return report_validation(context) ? 3 : 0;
}

// One line for any error: the message, prefixed by the tool's name.
std::string one_line(std::string message) {
  for (char& c : message)
    if (c == '\n') c = ' ';
  return message;
}

}  // namespace

int main(int argc, char** argv) {
  bench::Options options;
  try {
    options = bench::parse_options(argc, argv);
  } catch (const bench::UsageError& e) {
    std::cerr << "attendre-bench: " << one_line(e.what()) << " (see --help)\n";
    return 2;
  }
  if (options.help) {
    std::cout << bench::usage_text();
    return 0;
  }
  try {
    return run(options);
  } catch (const std::exception& e) {
    std::fflush(stdout);
    std::cerr << "attendre-bench: " << one_line(e.what()) << "\n";
    return 1;
  }
}
