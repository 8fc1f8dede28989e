// attendre-replay: runs one ATTENDRE layer over a recorded stream and writes
// what it emitted and retained (spec section 6). Exit status: 0 success,
// 1 input/configuration/runtime error, 2 usage error, 3 validation messages.
#include "cli.hpp"
#include "replay.hpp"

#include <attendre/context.hpp>
#include <attendre/error.hpp>
#include <attendre/gpu.hpp>
#include <attendre/reference.hpp>

#include <cstdio>
#include <iostream>
#include <new>
#include <string>
#include <vector>

namespace {

using namespace attendre;
using namespace attendre::replay;

// Scripts grep stderr line by line, so a message never spans lines.
void report(const std::string& message) {
  std::string line = "attendre-replay: " + message;
  for (char& c : line)
    if (c == '\n' || c == '\r') c = ' ';
  std::fprintf(stderr, "%s\n", line.c_str());
}

int run(const Options& options) {
  const Inputs inputs = load_inputs(options);
  const LayerConfig config = make_config(options, inputs.shape);
  config.validate();  // before any device work, so a bad config never needs a GPU

  Results results;
  std::string device;
  if (options.device == Device::cpu) {
    reference::Layer layer(config);
    results = run_layer(layer, inputs);
    device = "cpu (float64 reference)";
  } else {
    Context context;
    {
      // Destroyed before the check: teardown can raise messages too.
      gpu::Layer layer(context, config);
      results = run_layer(layer, inputs);
    }
    const std::vector<std::string> messages = context.validation_messages();
    if (context.validation_enabled() && !messages.empty()) {
      for (const std::string& m : messages) report("validation: " + m);
      report(std::to_string(messages.size()) + " Vulkan validation message(s); no output written");
      return 3;
    }
    device = "gpu (" + context.caps().name + ")";
  }

  write_results(options.out_dir, results);
  std::cout << "replayed T=" << results.rows << " rows in " << results.steps << " steps (" << results.chunks
            << " chunks + " << results.steps - results.chunks << " drain) on " << device << " -> "
            << options.out_dir << std::endl;
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const std::vector<std::string> args(argv + (argc > 0 ? 1 : 0), argv + argc);
    const Options options = parse_args(args);
    if (options.help) {
      std::cout << help_text();
      return 0;
    }
    return run(options);
  } catch (const UsageError& e) {
    report(std::string(e.what()) + " (see --help)");
    return 2;
  } catch (const Error& e) {
    report(e.what());
    return 1;
  } catch (const std::bad_alloc&) {
    report("out of host memory (lower --kv-capacity, --q-capacity or the stream length)");
    return 1;
  } catch (const std::exception& e) {
    report(e.what());
    return 1;
  } catch (...) {
    report("unknown error");
    return 1;
  }
}
