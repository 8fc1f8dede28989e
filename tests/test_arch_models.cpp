// The tiny random-weight files of ../shared/arch-models (qwen3, phi3, gemma2, gemma3), each
// with a real vocabulary, run through attendre-generate exactly as the issue
// spells the command: --full-context --temperature 0 --logits --json, on the
// GPU and on the float64 reference (--device cpu). The prompt ids and the
// greedy ids must be llama.cpp's, the logits at its listed positions within
// `bound` of max|logit| (the difference reached is printed).
//
// The files' matrices are F16, which llama.cpp's CPU backend multiplies with
// rows rounded to fp16 (normed, attention, activated and final rows) and
// whose GELU it reads from an fp16 table; the tools do all of it for these
// files (fp16 activations, docs/spec-notes.md). Position 0 then agrees to
// 1e-7 on the reference. Where a row's value sits within fp32 noise of an
// fp16 rounding boundary, fp32 or float64 rounds it to the other neighbour
// than llama.cpp's float arithmetic, and the random weights carry each such
// step on through the blocks and the K/V memories: later positions part by
// ~1e-3 of max|logit|, GPU and reference by as much from each other. With
// RoPE turning by ggml's float angle (docs/spec-notes.md), every file is
// held to the 2e-3 (measured: qwen3 4.9e-4 / 6.3e-4, phi3 1.5e-3 /
// 1.5e-3, gemma2 5.4e-4 / 6.2e-4, gemma3 3.5e-4 / 3.3e-4, reference / GPU;
// phi3 with the exact angle 2.7e-3 / 3.4e-3). A wrong graph is far outside
// them: qwen3 without its k norm moves the logits by 0.99 of max|logit|
// and the greedy ids from the first one; gemma2 with a sliding window of
// 15 or 17 instead of 16 by 0.24-0.28, without its attention soft-cap by
// 0.03; phi3 without its attention and final rows rounded by 5.6e-3 and
// 6.5e-3 (reference, GPU).
#if defined(ATTENDRE_GENERATE_BINARY)

#include "no_device/gguf_test_support.hpp"
#include "support.hpp"

#include "npy/npy.hpp"

#include <nlohmann/json.hpp>

#include <cmath>
#include <fstream>

using namespace attendre;
namespace fs = std::filesystem;

namespace {

nlohmann::json read_json(const fs::path& path) {
  std::ifstream in(path);
  REQUIRE(in);
  return nlohmann::json::parse(in);
}

// Runs `name`.gguf on `device` and compares with llama.cpp's outputs.
void check_against_llama_cpp(const fs::path& folder, const std::string& name, const std::string& device,
                             double bound) {
  INFO(name << " on " << device);
  const nlohmann::json expected = read_json(folder / (name + ".json"));
  const auto prompt_ids = expected["prompt_ids"].get<std::vector<uint32_t>>();
  const auto generated_ids = expected["generated_ids"].get<std::vector<uint32_t>>();
  const auto positions = expected["logit_positions"].get<std::vector<uint32_t>>();
  const auto vocab = expected["n_vocab"].get<int64_t>();
  test::TempDir dir;
  const std::string args = "--model '" + (folder / (name + ".gguf")).string() + "' --prompt-file '" +
                           (folder / "prompt.txt").string() + "' --full-context --temperature 0 --max-tokens " +
                           std::to_string(generated_ids.size()) + " --device " + device + " --logits '" +
                           dir / "out.npy" + "' --json '" + dir / "out.json" + "'";
  const test::ToolStreams r = test::run_tool_streams(ATTENDRE_GENERATE_BINARY, args);
  INFO(r.err);
  REQUIRE(r.code == 0);
  const nlohmann::json json = read_json(dir / "out.json");
  CHECK(json["prompt_ids"].get<std::vector<uint32_t>>() == prompt_ids);
  CHECK(json["generated_ids"].get<std::vector<uint32_t>>() == generated_ids);

  const npy::Array ours = npy::read_expect(dir / "out.npy", npy::DType::f32, 2);
  const npy::Array theirs = npy::read_expect(folder / (name + ".logits.npy"), npy::DType::f32, 2);
  REQUIRE(ours.shape == std::vector<int64_t>{static_cast<int64_t>(prompt_ids.size()), vocab});
  REQUIRE(theirs.shape == std::vector<int64_t>{static_cast<int64_t>(positions.size()), vocab});
  const auto a = ours.as<float>(), b = theirs.as<float>();
  double scale = 0.0, difference = 0.0;
  for (size_t row = 0; row < positions.size(); ++row)
    for (int64_t v = 0; v < vocab; ++v) {
      const double expect = b[row * vocab + v];
      scale = std::max(scale, std::fabs(expect));
      difference = std::max(difference, std::fabs(a[positions[row] * vocab + v] - expect));
    }
  MESSAGE(name << " on " << device << ": max |logit - llama.cpp's| = " << difference << " = " << difference / scale
               << " of max |logit| " << scale);
  CHECK(difference <= bound * scale);
}

// The logits attendre-generate writes for `model` with `flags` on the GPU.
std::vector<float> prompt_logits(const fs::path& model, const std::string& flags) {
  test::TempDir dir;
  const test::ToolStreams r = test::run_tool_streams(
      ATTENDRE_GENERATE_BINARY, "--model '" + model.string() + "' --prompt 'Once upon a time' --full-context " +
                                    "--temperature 0 --max-tokens 1 --logits '" + dir / "out.npy" + "' " + flags);
  INFO(r.err);
  REQUIRE(r.code == 0);
  const npy::Array logits = npy::read_expect(dir / "out.npy", npy::DType::f32, 2);
  const auto values = logits.as<float>();
  return {values.begin(), values.end()};
}

}  // namespace

TEST_CASE("attendre-generate: F16 rows round to fp16 by default for the new architectures only") {
  const auto models = test::shared_models();
  if (!models) return;
  const fs::path arch = models->parent_path() / "arch-models";
  const fs::path llama = *models / "aidreams260K-F16.gguf";
  if (!fs::is_directory(arch) || !fs::exists(llama)) {
    MESSAGE("skipped: " << arch.string() << " or " << llama.string() << " is absent");
    return;
  }
  // llama keeps fp32 rows (what matches llama.cpp on F32 copies to 1e-5)...
  const std::vector<float> llama_default = prompt_logits(llama, "");
  CHECK(llama_default == prompt_logits(llama, "--fp32-activations"));
  CHECK(llama_default != prompt_logits(llama, "--fp16-activations"));
  // ... qwen3, phi3, gemma2 and gemma3 round them as llama.cpp's CPU
  // backend did for their outputs, and --fp32-activations turns that off.
  for (const char* name : {"qwen3-tiny", "phi3-tiny", "gemma2-tiny", "gemma3-tiny"}) {
    INFO(name);
    const fs::path file = arch / (std::string(name) + ".gguf");
    const std::vector<float> rounded = prompt_logits(file, "");
    CHECK(rounded == prompt_logits(file, "--fp16-activations"));
    CHECK(rounded != prompt_logits(file, "--fp32-activations"));
  }
}

TEST_CASE("attendre-generate: qwen3, phi3, gemma2 and gemma3 tiny files match llama.cpp's prompt ids, logits and greedy ids") {
  const auto models = test::shared_models();
  if (!models) return;
  const fs::path folder = models->parent_path() / "arch-models";
  if (!fs::is_directory(folder)) {
    MESSAGE("skipped: no shared arch-models folder at " << folder.string());
    return;
  }
  for (const char* name : {"qwen3-tiny", "phi3-tiny", "gemma2-tiny", "gemma3-tiny"})
    for (const char* device : {"gpu", "cpu"}) check_against_llama_cpp(folder, name, device, 2e-3);
}

#endif
