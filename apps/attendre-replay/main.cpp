// attendre-replay: runs one ATTENDRE layer over a recorded stream and writes
// what it emitted and retained (spec section 6). Exit status: 0 success,
// 1 input/configuration/runtime error, 2 usage error, 3 validation messages.
#include "budget.hpp"
#include "cli.hpp"
#include "inputs.hpp"
#include "common/output_set.hpp"
#include "common/stack_device.hpp"
#include "replay.hpp"
#include "result_files.hpp"

#include <attendre/context.hpp>
#include <attendre/diagnostics.hpp>
#include <attendre/error.hpp>
#include <attendre/gpu.hpp>
#include <attendre/reference/layer.hpp>

#include <iostream>
#include <span>
#include <string>
#include <vector>

namespace {

using namespace attendre;
using namespace attendre::replay;

void report(const std::string& message) { cli::report("attendre-replay", message); }

using cli::naming_flags;

int run(const Options& options) {
  // The result folder first, as the other tools stage their outputs: a
  // --out that cannot be made fails at once, not after reading the inputs.
  apps::OutputSet out(options.out_dir, {ResultFiles::kNames.begin(), ResultFiles::kNames.end()}, "attendre-replay");
  const Inputs inputs = load_inputs(options);
  const LayerConfig config = make_config(options, inputs.shape);
  naming_flags([&] { config.check().or_throw(); });  // before any device work, so a bad config never needs a GPU
  check_magnitudes(options, inputs, config);
  const uint64_t steps = expected_steps(inputs, config);
  check_host_memory(options, inputs, config, steps);
  check_disk_space(options, inputs, config, steps);

  ResultFiles files(out.staging(), inputs.shape, inputs.rows, steps, config.kv.capacity);
  RunSummary summary;
  std::string device;
  if (options.device == Device::cpu) {
    summary = naming_flags([&] {
      reference::Layer layer(config);
      return run_layer(layer, inputs, files);
    });
    device = "cpu (float64 reference)";
  } else {
    auto context_owner = Context::create().value_or_throw();
    Context& context = *context_owner;
    if (options.verbose) cli::report_variants("attendre-replay", context);
    // Destroyed before the check: teardown can raise messages too.
    summary = naming_flags([&] {
      auto layer_owner = gpu::Layer::create(context, config).value_or_throw();
      gpu::Layer& layer = *layer_owner;
      return run_layer(layer, inputs, files);
    });
    const std::vector<std::string> messages = validation_messages(context);
    if (context.validation_enabled() && !messages.empty()) {
      for (const std::string& m : messages) report("validation: " + m);
      report(std::to_string(messages.size()) + " Vulkan validation message(s); no output written");
      return 3;
    }
    device = "gpu (" + context.caps().name + ")";
  }

  files.close();
  out.commit();
  std::cout << "replayed T=" << summary.rows << " rows in " << summary.steps << " steps (" << summary.chunks
            << " chunks + " << summary.steps - summary.chunks << " drain) on " << device << " -> "
            << options.out_dir << std::endl;
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return cli::run_main("attendre-replay", argc, argv, [](std::span<const std::string> args) {
    const Options options = parse_args(args);
    if (options.help) {
      std::cout << help_text();
      return 0;
    }
    return run(options);
  });
}
