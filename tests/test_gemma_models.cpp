// The shared Gemma files of ../shared/arch-models (random weights, real
// vocabularies, llama.cpp's logits and greedy ids for one prompt) through
// attendre-generate exactly as a user runs it, on the GPU and on the
// float64 reference: its logits within 2e-3 of max|logit| of llama.cpp's
// (llama.cpp's CPU GELU rounds through an fp16 table; the agreement
// reached is printed), and the same prompt and greedy ids.
#if defined(ATTENDRE_GENERATE_BINARY)

#include "model_checks.hpp"
#include "support.hpp"

#include "npy/npy.hpp"

#include <nlohmann/json.hpp>

#include <doctest/doctest.h>

#include <fstream>

using namespace attendre;
namespace fs = std::filesystem;

namespace {

std::optional<fs::path> shared_arch_models() {
  const fs::path folder = fs::path(ATTENDRE_SHARED_MODELS).parent_path() / "arch-models";
  if (fs::is_regular_file(folder / "prompt.txt")) return folder;
  MESSAGE("skipped: no shared arch-models folder at " << folder.string());
  return std::nullopt;
}

nlohmann::json read_json(const fs::path& path) {
  std::ifstream in(path);
  REQUIRE(in);
  return nlohmann::json::parse(in);
}

std::string quote(const fs::path& p) {
  std::string q = "'";
  q += p.string();
  q += "'";
  return q;
}

// `name`.gguf through the tool with `device_flags`, against `name`.json and
// `name`.logits.npy; returns the largest logit difference over max|logit|.
double check_against_llama_cpp(const fs::path& folder, const std::string& name, const std::string& device_flags) {
  const nlohmann::json expected = read_json(folder / (name + ".json"));
  const auto generated = expected["generated_ids"].get<std::vector<uint32_t>>();
  const auto positions = expected["logit_positions"].get<std::vector<int64_t>>();
  const auto vocab = expected["n_vocab"].get<int64_t>();
  test::TempDir dir;
  // Appended piece by piece (GCC 12 warns falsely on a long chain of string + literal).
  std::string args = "--model ";
  args += quote(folder / (name + ".gguf"));
  args += " --prompt-file ";
  args += quote(folder / "prompt.txt");
  args += " --full-context --temperature 0 --max-tokens ";
  args += std::to_string(generated.size());
  args += " --logits ";
  args += quote(dir / "logits.npy");
  args += " --json ";
  args += quote(dir / "out.json");
  args += device_flags;
  const test::ToolStreams r = test::run_tool_streams(ATTENDRE_GENERATE_BINARY, args);
  INFO(r.err);
  REQUIRE(r.code == 0);
  const nlohmann::json out = read_json(dir / "out.json");
  CHECK(out["prompt_ids"] == expected["prompt_ids"]);
  CHECK(out["generated_ids"].get<std::vector<uint32_t>>() == generated);

  const npy::Array reference = npy::read_expect(folder / (name + ".logits.npy"), npy::DType::f32, 2);
  const npy::Array logits = npy::read_expect(dir / "logits.npy", npy::DType::f32, 2);
  REQUIRE(reference.shape == std::vector<int64_t>{static_cast<int64_t>(positions.size()), vocab});
  REQUIRE(logits.shape == std::vector<int64_t>{static_cast<int64_t>(expected["prompt_ids"].size()), vocab});
  const auto want = reference.as<float>(), got = logits.as<float>();
  double scale = 0.0, worst = 0.0;
  for (float x : want) scale = std::max(scale, std::fabs(static_cast<double>(x)));
  for (size_t i = 0; i < positions.size(); ++i)
    for (int64_t v = 0; v < vocab; ++v)
      worst = std::max(worst, std::fabs(static_cast<double>(got[positions[i] * vocab + v]) - want[i * vocab + v]));
  const double relative = worst / scale;
  MESSAGE(name << " " << (device_flags.empty() ? std::string("gpu") : device_flags) << ": max|logit - llama.cpp| = " << relative
               << " of max|logit| " << scale);
  CHECK(relative <= 2e-3);
  return relative;
}

}  // namespace

TEST_CASE("gemma models: attendre-generate --full-context equals llama.cpp's logits and greedy ids (GPU and --device cpu)") {
  const auto folder = shared_arch_models();
  if (!folder) return;
  for (const char* name : {"gemma2-tiny"}) {
    INFO(name);
    check_against_llama_cpp(*folder, name, "");
    check_against_llama_cpp(*folder, name, " --device cpu");
  }
}

#endif
