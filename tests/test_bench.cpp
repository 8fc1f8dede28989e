// attendre-bench run as CI would: --quick --json, then the JSON checked
// against apps/attendre-bench/SCHEMA.md, parsed strictly by nlohmann::json (every
// required key present, every number finite, measurements positive,
// efficiency in (0, 1.5], kernel names from the documented set). No timing
// thresholds: the numbers depend on the machine.
#include "support.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#ifdef ATTENDRE_BENCH_BINARY

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

using Outcome = attendre::test::ToolOutcome;

Outcome run_bench(const std::string& arguments) { return attendre::test::run_tool(ATTENDRE_BENCH_BINARY, arguments); }

using Json = nlohmann::ordered_json;

// Checks that record where in the document they looked.
struct Checker {
  const Json& at(const Json& object, const std::string& key, const std::string& where) {
    INFO(where << "." << key);
    REQUIRE(object.is_object());
    REQUIRE_MESSAGE(object.contains(key), "missing key " << where << "." << key);
    return object.at(key);
  }
  double number(const Json& object, const std::string& key, const std::string& where) {
    const Json& v = at(object, key, where);
    INFO(where << "." << key);
    REQUIRE(v.is_number());
    const double x = v.get<double>();
    CHECK(std::isfinite(x));
    return x;
  }
  double positive(const Json& object, const std::string& key, const std::string& where) {
    const double x = number(object, key, where);
    INFO(where << "." << key << " = " << x);
    CHECK(x > 0.0);
    return x;
  }
  std::string text(const Json& object, const std::string& key, const std::string& where) {
    const Json& v = at(object, key, where);
    INFO(where << "." << key);
    REQUIRE(v.is_string());
    return v.get<std::string>();
  }
  const Json& list(const Json& object, const std::string& key, const std::string& where) {
    const Json& v = at(object, key, where);
    INFO(where << "." << key);
    REQUIRE(v.is_array());
    return v;
  }
};

// No null and no non-finite number anywhere: the writer emits null for non-finite values.
void check_all_numbers(const Json& v, const std::string& where) {
  INFO(where);
  CHECK_FALSE(v.is_null());
  if (v.is_number()) CHECK(std::isfinite(v.get<double>()));
  if (v.is_array())
    for (size_t i = 0; i < v.size(); ++i) check_all_numbers(v[i], where + "[" + std::to_string(i) + "]");
  if (v.is_object())
    for (const auto& [k, m] : v.items()) check_all_numbers(m, where + "." + k);
}

const std::set<std::string> kLayerKernels = {"score", "topk", "attend", "flash_attend", "evict_select", "compact"};
const std::set<std::string> kPolicies = {"lru", "lfu", "lra_last", "lra_max", "lra_sum", "lfa"};
const std::set<std::string> kBlockKernels = {"matmul", "matvec", "norm_rms", "norm_layer", "rope",
                                             "activation", "embedding", "add"};
// The encodings of the bench's weight-decoding entries (weights.cpp).
const std::set<std::string> kWeightPrecisions = {"f32",  "f16",  "bf16", "q8_0", "q4_0", "q4_1",
                                                 "q5_0", "q5_1", "q4_k", "q5_k", "q6_k"};

bool allowed_kernel(const std::string& name) {
  if (kLayerKernels.count(name) || kBlockKernels.count(name)) return true;
  return name.rfind("policy_", 0) == 0 && kPolicies.count(name.substr(7));
}

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("attendre-bench-" + std::to_string(getpid()) + "-" + name)).string();
}

}  // namespace

TEST_CASE("attendre-bench --quick --json: the JSON follows SCHEMA.md") {
  const std::string path = temp_path("quick.json");
  const Outcome outcome = run_bench("--quick --json '" + path + "'");
  INFO(outcome.output);
  REQUIRE(outcome.exit_code == 0);
  CHECK(outcome.output.find("Kernels") != std::string::npos);
  CHECK(outcome.output.find("Presets") != std::string::npos);

  std::ifstream in(path);
  REQUIRE(in.good());
  std::stringstream text;
  text << in.rdbuf();
  std::filesystem::remove(path);
  CHECK_FALSE(std::filesystem::exists(path + ".tmp"));
  Json doc;
  try {
    doc = Json::parse(text.str());  // strict RFC 8259: no comments, no trailing commas, nothing after the value
  } catch (const std::exception& e) {
    FAIL(e.what());
  }
  REQUIRE(doc.is_object());
  check_all_numbers(doc, "$");
  Checker c;

  CHECK(c.text(doc, "schema", "$") == "attendre-bench/1");
  REQUIRE(c.at(doc, "quick", "$").is_boolean());
  CHECK(c.at(doc, "quick", "$").get<bool>());
  c.positive(doc, "runtime_s", "$");

  const Json& device = c.at(doc, "device", "$");
  CHECK_FALSE(c.text(device, "name", "device").empty());
  for (const char* key : {"vendor", "driver", "api_version", "type"}) CHECK_FALSE(c.text(device, key, "device").empty());
  const Json& limits = c.at(device, "limits", "device");
  for (const char* key : {"max_invocations", "workgroup", "max_shared_bytes", "max_storage_range", "max_allocation",
                          "subgroup_size", "timestamp_period_ns"})
    c.positive(limits, key, "device.limits");
  for (const char* key : {"max_loop_iterations", "device_local_bytes"}) CHECK(c.number(limits, key, "device.limits") >= 0.0);
  CHECK(c.at(limits, "storage_16bit", "device.limits").is_boolean());
  // The variant of every device-dependent kernel family, printed too.
  const Json& variants = c.list(device, "kernel_variants", "device");
  CHECK(variants.size() >= 5);
  for (const Json& v : variants) {
    CHECK_FALSE(c.text(v, "family", "device.kernel_variants").empty());
    CHECK_FALSE(c.text(v, "variant", "device.kernel_variants").empty());
    CHECK(outcome.output.find(c.text(v, "family", "device.kernel_variants") + ":") != std::string::npos);
  }
  CHECK(c.at(device, "quirks", "device").is_array());
  CHECK(c.at(device, "disabled_features", "device").is_array());

  c.positive(doc, "copy_gbps", "$");
  c.positive(doc, "fma_gflops", "$");
  const Json& samples = c.at(doc, "limits", "$");
  for (const char* series : {"copy", "fma"}) {
    const Json& list = c.list(samples, series, "limits");
    CHECK_FALSE(list.empty());
    for (const Json& s : list) {
      c.positive(s, "ms", std::string("limits.") + series);
      c.positive(s, series == std::string("copy") ? "gbps" : "gflops", std::string("limits.") + series);
    }
  }

  const Json& kernels = c.list(doc, "kernels", "$");
  REQUIRE_FALSE(kernels.empty());
  std::set<std::string> seen, weight_precisions;
  for (size_t i = 0; i < kernels.size(); ++i) {
    const Json& k = kernels[i];
    const std::string where = "kernels[" + std::to_string(i) + "]";
    const std::string name = c.text(k, "name", where);
    INFO(where << " " << name);
    CHECK(allowed_kernel(name));
    seen.insert(name);
    const std::string precision = c.text(k, "precision", where);
    // The weight-decoding entries run every encoding the kernels decode.
    if (k.contains("weight_bytes")) {
      CHECK(kWeightPrecisions.count(precision));
      CHECK((name == "matmul" || name == "matvec"));
      for (const char* key : {"weight_bytes", "weight_gbps", "copy_fraction"}) c.positive(k, key, where);
      weight_precisions.insert(precision);
    } else {
      CHECK((precision == "f32" || precision == "f16"));
    }
    const Json& shape = c.at(k, "shape", where);
    REQUIRE(shape.is_object());
    CHECK_FALSE(shape.empty());
    for (const auto& [dim, n] : shape.items()) {
      INFO(where << ".shape." << dim);
      REQUIRE(n.is_number_unsigned());
      CHECK(n.get<uint64_t>() >= 1);
    }
    for (const char* key : {"median_ms", "bytes", "flops", "gbps", "gflops", "samples"}) c.positive(k, key, where);
    // The efficiency is the kernel's rate against the run's limits, as the
    // README defines it. The two timings (the kernel's, the limits') are
    // taken at different moments: with another test loading the cores the
    // copy limit once measured 0.35 GB/s (30x under the idle figure), so
    // only a byte or flop count off by two orders of magnitude gets past 100.
    const double efficiency = c.positive(k, "efficiency", where);
    const double seconds = c.number(k, "median_ms", where) / 1e3;
    const double expected = std::max(c.number(k, "bytes", where) / (c.number(doc, "copy_gbps", "$") * 1e9),
                                     c.number(k, "flops", where) / (c.number(doc, "fma_gflops", "$") * 1e9)) /
                            seconds;
    CHECK(efficiency == doctest::Approx(expected).epsilon(0.02).scale(0));
    CHECK(efficiency <= 100.0);
    const std::string bound = c.text(k, "bound", where);
    CHECK((bound == "memory" || bound == "compute"));
    if (kBlockKernels.count(name)) CHECK_FALSE(c.text(k, "role", where).empty());
  }
  // --quick still covers every layer kernel, at least one policy and the block kernels.
  for (const std::string& name : kLayerKernels) CHECK_MESSAGE(seen.count(name), "no " << name << " entry");
  CHECK(std::any_of(seen.begin(), seen.end(), [](const std::string& n) { return n.rfind("policy_", 0) == 0; }));
  CHECK(seen.count("matmul"));
  CHECK(weight_precisions == kWeightPrecisions);  // --quick's shape holds whole blocks of every type

  const Json& skipped = c.list(doc, "skipped", "$");
  for (const Json& s : skipped) {
    CHECK_FALSE(c.text(s, "what", "skipped").empty());
    CHECK_FALSE(c.text(s, "reason", "skipped").empty());
  }

  const Json& presets = c.list(doc, "presets", "$");
  bool mobile = false;
  for (const Json& p : presets) {
    const std::string name = c.text(p, "name", "presets");
    const std::string where = "presets." + name;
    mobile = mobile || name == "mobile";
    for (const char* key : {"ms_per_step", "tokens_per_s", "gpu_bytes", "planned_full_bytes", "ms_per_step_full_depth",
                            "layers_run", "layers_model", "hidden", "S", "M", "N", "K", "steps_timed", "dispatches"})
      c.positive(p, key, where);
    CHECK(c.number(p, "overhead_ms", where) >= 0.0);
    c.positive(p, "longest_dispatch_ms", where);
    CHECK_FALSE(c.text(p, "longest_dispatch", where).empty());
    CHECK(c.number(p, "layers_run", where) <= c.number(p, "layers_model", where));
    const Json& split = c.at(p, "kernel_ms", where);
    REQUIRE(split.is_object());
    CHECK_FALSE(split.empty());
    for (const auto& [kernel, ms] : split.items()) {
      INFO(where << ".kernel_ms." << kernel);
      // The split names every dispatch: the kernel names above, or the shader's own name for a kernel
      // the bench has no name for yet.
      CHECK_FALSE(kernel.empty());
      CHECK(kernel.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789_") == std::string::npos);
      REQUIRE(ms.is_number());
      CHECK(ms.get<double>() > 0.0);
    }
    for (const Json& note : c.list(p, "notes", where)) CHECK(note.is_string());
  }
  CHECK(mobile);

  for (const Json& m : c.list(doc, "memory_plans", "$")) c.positive(m, "gpu_bytes", "memory_plans");

  const Json& scaling = c.at(doc, "scaling", "$");
  for (const char* key : {"heads_q", "heads_kv", "head_dim", "S", "M", "N", "K"}) c.positive(scaling, key, "scaling");
  for (const char* series : {"bounded", "dense"}) {
    const Json& list = c.list(scaling, series, "scaling");
    CHECK_FALSE(list.empty());
    double last = 0.0;
    for (const Json& point : list) {
      const double positions = c.positive(point, "positions", std::string("scaling.") + series);
      CHECK(positions > last);  // ascending lengths
      last = positions;
      c.positive(point, "ms_per_step", std::string("scaling.") + series);
      c.positive(point, "streamed", std::string("scaling.") + series);
    }
  }
  if (scaling.contains("crossover_positions")) {
    const Json& crossover = scaling.at("crossover_positions");
    REQUIRE(crossover.is_number());
    CHECK(crossover.get<double>() > 0.0);
  }
}

TEST_CASE("attendre-bench: bad options exit 2 with one line, --help exits 0") {
  for (const char* arguments : {"--bogus", "--json", "--filter nothing", "--layers x", "--quick=1"}) {
    const Outcome outcome = run_bench(arguments);
    INFO(arguments << " -> " << outcome.output);
    CHECK(outcome.exit_code == 2);
    CHECK(outcome.output.rfind("attendre-bench: ", 0) == 0);
    CHECK(outcome.output.find('\n') == outcome.output.size() - 1);
  }
  const Outcome help = run_bench("--help");
  CHECK(help.exit_code == 0);
  CHECK(help.output.find("--json") != std::string::npos);
}

TEST_CASE("attendre-bench: an unwritable --json or --svg path fails before any work, with one line, and leaves no file") {
  const std::string dir = temp_path("missing-dir");
  const std::string file = temp_path("a-file");
  std::ofstream(file) << "not a folder";
  for (const std::string& outputs : {"--json '" + dir + "/out.json'", "--svg '" + file + "/plots'"}) {
    const Outcome outcome = run_bench("--quick --filter compact " + outputs);
    INFO(outcome.output);
    CHECK(outcome.exit_code == 1);
    // The one line is all: no device line, no measurement before the failure.
    CHECK(outcome.output.rfind("attendre-bench: ", 0) == 0);
    CHECK(outcome.output.find('\n') == outcome.output.size() - 1);
  }
  CHECK_FALSE(std::filesystem::exists(dir));
  std::filesystem::remove(file);
}

#endif  // ATTENDRE_BENCH_BINARY
