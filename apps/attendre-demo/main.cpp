// attendre-demo: what the eviction policies do, in one table. A generated
// stream with planted "needle" keys (which later queries attend to heavily)
// runs through one ATTENDRE layer under every policy at a small K/V memory.
#include "options.hpp"
#include "runs.hpp"
#include "stream.hpp"

#include <attendre/diagnostics.hpp>
#include <attendre/context.hpp>
#include <attendre/error.hpp>
#include <attendre/gpu.hpp>
#include <attendre/reference/layer.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace {

struct Row {
  const char* label;
  attendre::Policy policy;
  uint32_t sinks = 0;
};

// Every policy of spec 2.4, labelled with the published method it matches.
std::vector<Row> rows() {
  using attendre::Policy;
  return {
      {"fifo (sliding window)", Policy::fifo()},
      {"fifo + 4 sinks (StreamingLLM)", Policy::fifo(), 4},
      {"lru", Policy::lru()},
      {"lfu", Policy::lfu()},
      {"lra_last (TOVA)", Policy::lra_last()},
      {"lra_max", Policy::lra_max()},
      {"lra_sum", Policy::lra_sum()},
      {"lfa lambda=0 (H2O)", Policy::lfa(0.0)},
      {"lfa lambda=1e-3", Policy::lfa(1e-3)},
  };
}

// Small enough that the default run finishes in seconds on a CPU Vulkan
// driver. N = 32 lets each query wait two chunks, so it also sees the keys
// that follow it; K = 32 < M keeps the top-K retrieval, and with it the
// usage statistics lru and lfu count, meaningful.
attendre::LayerConfig layer_config(const demo::Stream& stream, uint32_t memory, const Row& row) {
  attendre::LayerConfig config;
  config.shape = stream.shape;
  config.chunk = 16;
  config.q_capacity = 32;
  config.kv.capacity = memory;
  config.kv.policy = row.policy;
  config.kv.n_sink = row.sinks;
  config.retrieval.top_k = 32;
  return config;
}

std::unique_ptr<attendre::AttendreLayer> make_layer(attendre::Context* context, const attendre::LayerConfig& config) {
  if (context) return attendre::gpu::Layer::create(*context, config).value_or_throw();
  return std::make_unique<attendre::reference::Layer>(config);
}

// Without a working Vulkan device the demo still runs, on the reference.
std::unique_ptr<attendre::Context> open_device(bool want_gpu) {
  if (!want_gpu) return nullptr;
  try {
    return attendre::Context::create().value_or_throw();
  } catch (const attendre::Error& e) {
    std::cerr << "attendre-demo: note: no usable Vulkan device (" << e.what()
              << "); running the CPU reference instead\n";
    return nullptr;
  }
}

// Validation messages mean a library bug; they must not scroll by unnoticed.
bool report_validation(const attendre::Context* context) {
  if (!context || !context->validation_enabled()) return false;
  const std::vector<std::string> messages = validation_messages(*context);
  for (const std::string& m : messages) std::cerr << "validation: " << m << "\n";
  if (!messages.empty()) std::cerr << "attendre-demo: " << messages.size() << " validation message(s)\n";
  return !messages.empty();
}

int run_demo(const demo::Options& options) {
  demo::StreamParams params;
  params.tokens = options.tokens;
  const demo::Stream stream = demo::generate_stream(params);
  const std::vector<Row> table = rows();
  const attendre::LayerConfig first = layer_config(stream, options.memory, table.front());
  std::unique_ptr<attendre::Context> context = open_device(options.gpu);

  std::printf("device: %s\n", context ? context->caps().name.c_str() : "CPU reference (float64, no Vulkan)");
  std::printf("stream: %u tokens, %zu needles, heads q/kv %u/%u, head_dim %u, seed %llu\n",
              stream.tokens, stream.needles.size(), stream.shape.heads_q, stream.shape.heads_kv,
              stream.shape.head_dim, static_cast<unsigned long long>(params.seed));
  std::printf("layer:  chunk S=%u, Q memory N=%u, K/V memory M=%u, top-K K=%u\n", first.chunk,
              first.q_capacity, first.kv.capacity, first.retrieval.top_k);
  std::printf("needles: planted keys still held at the end; mass: share of full attention's\n"
              "weight on the keys held when each query retrieved; steps/s: without readbacks.\n");
  std::fflush(stdout);

  std::unique_ptr<demo::FullAttention> full;
  bool header = false;
  for (const Row& row : table) {
    const attendre::LayerConfig config = layer_config(stream, options.memory, row);
    const demo::RunRecord record = demo::record_run(*make_layer(context.get(), config), stream);
    if (!full) full = std::make_unique<demo::FullAttention>(stream, config.scale(), record);
    const demo::Timing timing = demo::time_run(*make_layer(context.get(), config), stream);
    if (!header) {
      std::printf("full attention itself puts %.1f%% of its weight on the needles.\n\n",
                  100.0 * full->needle_mass());
      std::printf("%-31s %8s %8s %9s\n", "policy", "needles", "mass", "steps/s");
      header = true;
    }
    const std::string kept = std::to_string(demo::needles_kept(stream, record)) + "/" +
                             std::to_string(stream.needles.size());
    std::printf("%-31s %8s %7.1f%% %9.0f\n", row.label, kept.c_str(), 100.0 * full->retained_mass(record),
                timing.steps_per_second());
    std::fflush(stdout);  // rows appear as their runs finish
  }
  return report_validation(context.get()) ? 3 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  demo::Options options;
  try {
    options = demo::parse_options(argc, argv);
  } catch (const demo::UsageError& e) {
    std::cerr << "attendre-demo: " << e.what() << " (see --help)\n";
    return 2;
  }
  if (options.help) {
    std::cout << demo::usage_text();
    return 0;
  }
  try {
    return run_demo(options);
  } catch (const attendre::Error& e) {
    std::cerr << "attendre-demo: " << e.what() << "\n";
    return 1;
  }
}
