#include "options.hpp"

#include <algorithm>
#include <charconv>
#include <string_view>

namespace bench {
namespace {

// Every name --filter accepts; anything else is a usage error (a typo
// would otherwise silently measure nothing).
const std::vector<std::string> kLayerKernels = {"score", "topk", "attend", "flash_attend", "evict_select",
                                                "compact", "policy"};
const std::vector<std::string> kBlockKernels = {"matmul", "matvec", "norm_rms", "norm_layer", "rope",
                                                "activation", "embedding", "add"};
const std::vector<std::string> kPresets = {"mobile", "desktop"};

bool family(const std::string& token, const std::string& name) {
  return name == token || (name.size() > token.size() && name.compare(0, token.size(), token) == 0 &&
                           name[token.size()] == '_');
}

bool known(const std::string& token) {
  for (const auto* list : {&kLayerKernels, &kBlockKernels, &kPresets})
    for (const std::string& n : *list)
      if (family(token, n) || family(n, token)) return true;
  return token == "kernels" || token == "layer" || token == "blocks" || token == "presets" || token == "scaling";
}

}  // namespace

Filter::Filter(const std::string& text) {
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = std::min(text.find(',', start), text.size());
    std::string token = text.substr(start, comma - start);
    if (token.empty()) throw UsageError("--filter has an empty name in '" + text + "'");
    if (!known(token)) throw UsageError("--filter: unknown kernel or preset '" + token + "'");
    names_.push_back(std::move(token));
    start = comma + 1;
  }
}

bool Filter::named(const std::string& name) const {
  for (const std::string& token : names_)
    if (family(token, name)) return true;
  return false;
}

bool Filter::layer_kernel(const std::string& name) const {
  return empty() || named(name) || named("kernels") || named("layer");
}
bool Filter::block_kernel(const std::string& name) const {
  return empty() || named(name) || named("kernels") || named("blocks");
}
bool Filter::preset(const std::string& name) const { return empty() || named(name) || named("presets"); }
bool Filter::scaling() const { return empty() || named("scaling"); }

bool Filter::any_layer_kernel() const {
  for (const std::string& n : kLayerKernels)
    if (layer_kernel(n)) return true;
  for (const std::string& token : names_)
    if (family("policy", token)) return true;
  return false;
}
bool Filter::any_block_kernel() const {
  for (const std::string& n : kBlockKernels)
    if (block_kernel(n)) return true;
  return false;
}

Options parse_options(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i], value;
    bool has_value = false;
    if (const size_t eq = arg.find('='); arg.starts_with("--") && eq != std::string_view::npos) {
      value = arg.substr(eq + 1);
      arg = arg.substr(0, eq);
      has_value = true;
    }
    auto take = [&]() -> std::string {
      if (has_value) return std::string(value);
      if (i + 1 >= argc) throw UsageError(std::string(arg) + " needs a value");
      return argv[++i];
    };
    auto flag = [&]() {
      if (has_value) throw UsageError(std::string(arg) + " takes no value");
    };
    if (arg == "--help" || arg == "-h") {
      flag();
      o.help = true;
    } else if (arg == "--quick") {
      flag();
      o.quick = true;
    } else if (arg == "--dispatches") {
      flag();
      o.dispatches = true;
    } else if (arg == "--json") {
      o.json = take();
      if (o.json.empty()) throw UsageError("--json needs a file name");
    } else if (arg == "--svg") {
      o.svg = take();
      if (o.svg.empty()) throw UsageError("--svg needs a directory");
    } else if (arg == "--filter") {
      o.filter_text = take();
      o.filter = Filter(o.filter_text);
    } else if (arg == "--device") {
      o.device = take();
    } else if (arg == "--layers") {
      const std::string text = take();
      uint32_t n = 0;
      const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
      if (ec != std::errc{} || end != text.data() + text.size() || n > 1000)
        throw UsageError("--layers expects a whole number 0..1000, got '" + text + "'");
      o.layers = static_cast<int32_t>(n);
    } else if (arg == "--fp16-memory") {
      o.fp16_memory = true;
    } else if (arg == "--fp16-activations") {
      o.fp16_activations = true;
    } else if (arg == "--lm-infinite") {
      const std::string text = take();
      uint32_t n = 0;
      const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
      if (ec != std::errc{} || end != text.data() + text.size() || n == 0 || n > 0x7FFFFFFFu)
        throw UsageError("--lm-infinite expects n_local, a whole number 1..2^31-1, got '" + text + "'");
      o.lm_infinite = n;
    } else {
      throw UsageError("unknown option '" + std::string(arg) + "'");
    }
  }
  return o;
}

std::string usage_text() {
  return "usage: attendre-bench [--quick] [--json FILE] [--svg DIR] [--filter NAMES] [--layers L]\n"
         "                      [--lm-infinite N_LOCAL] [--fp16-memory] [--fp16-activations]\n"
         "                      [--dispatches] [--device D] [--help]\n"
         "\n"
         "Measures the device's copy bandwidth and FMA peak, then every ATTENDRE kernel\n"
         "over a sweep of shapes, the whole stack for named presets, and per-step cost\n"
         "against document length (bounded memory vs dense attention), each as a\n"
         "fraction of the measured limits (roofline efficiency).\n"
         "\n"
         "  --quick          a few shapes, one small preset, short scaling (< 60 s on lavapipe)\n"
         "  --json FILE      write every number as JSON (schema: apps/attendre-bench/SCHEMA.md)\n"
         "  --svg DIR        write plots: kernel efficiency per shape, step time vs length\n"
         "  --filter NAMES   comma-separated kernels or presets: score, topk, attend,\n"
         "                   policy (or policy_lru ...), evict_select, compact, matmul,\n"
         "                   norm_rms, rope, activation, embedding, mobile, desktop,\n"
         "                   scaling; groups: kernels, layer, blocks, presets\n"
         "  --layers L       transformer blocks per preset (0: the model's full depth;\n"
         "                   default: 2 with --quick, else the full depth for mobile\n"
         "                   and 2 for desktop, whose full depth takes many minutes)\n"
         "  --lm-infinite N  run the presets with LM-Infinite distances capped at\n"
         "                   n_local = N in every block (its score kernel variant)\n"
         "  --fp16-memory    run and plan the presets with fp16 K/V and Q memories\n"
         "  --fp16-activations  run and plan the presets with fp16 activations (the\n"
         "                   normed and FFN rows the matrix products read); the\n"
         "                   matmul and matvec sweeps then read fp16 A rows too\n"
         "  --dispatches     also print every dispatch of one timed step of each\n"
         "                   measurement (shader, kernel name, GPU ms): the profile\n"
         "                   behind a kernel's time\n"
         "  --device D       Vulkan device index or name substring (else ATTENDRE_DEVICE)\n"
         "\n"
         "ATTENDRE_VALIDATION=1 enables the Khronos validation layer with its\n"
         "synchronization checks (core: without them; gpu: GPU-assisted checks too);\n"
         "any message makes the bench exit 3. Errors print one line and exit 1 (2: bad usage).\n";
}

}  // namespace bench
