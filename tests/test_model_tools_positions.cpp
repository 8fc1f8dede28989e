// The model tools' --lm-infinite [N_LOCAL] and attendre-generate on T5, run
// as a user would on generated fixtures: what the tools print and write is
// what the library computes under the same setting (on the float64
// reference, token for token; on the GPU, the same tokens), and bad values
// are one line and exit status 2.
#if defined(ATTENDRE_GENERATE_BINARY) && defined(ATTENDRE_PERPLEXITY_BINARY)

#include "model_checks.hpp"
#include "model_fixtures.hpp"
#include "support.hpp"

#include <attendre/io/npy.hpp>
#include <attendre/perplexity.hpp>
#include <attendre/reference/encoder_decoder.hpp>

#include <nlohmann/json.hpp>

#include <fstream>

using namespace attendre;
namespace fs = std::filesystem;
using gguf::TensorType;

namespace {

std::string quote(const std::string& s) { return "'" + s + "'"; }

nlohmann::json read_json(const std::string& path) {
  std::ifstream in(path);
  REQUIRE(in);
  return nlohmann::json::parse(in);
}

// A one-line message with the tool's name and `needle`, exit status `code`.
void check_refused(const test::ToolStreams& r, int code, const std::string& tool, const std::string& needle) {
  INFO(r.err);
  CHECK(r.code == code);
  CHECK(r.err.rfind(tool + ": ", 0) == 0);
  CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  CHECK(r.err.find(needle) != std::string::npos);
}

// The tools' default plan for a decoder (S = 64, M = the trained context,
// fifo, causal) with LM-Infinite at `n_local`.
MemoryPlan tool_default(const Model& model, uint32_t n_local) {
  MemoryPlan plan;
  plan.chunk = 64;
  plan.all.kv.capacity = std::max(model.info().context_length, plan.chunk);
  plan.all.lm_infinite = {true, n_local};
  return plan;
}

constexpr const char* kText = "the cat sat on the mat once upon a time the cat sat on the mat";

}  // namespace

TEST_CASE("attendre-generate: --lm-infinite [N] is the library's LM-Infinite, the window defaults to the context") {
  test::TempDir dir;
  const fs::path path = test::write_fixture(dir.path, test::FixtureShape::for_type("llama", TensorType::f32), 53);
  Model model = Model::open(path);
  const std::string base = "--model " + quote(path) + " --prompt " + quote(kText) + " --max-tokens 6";
  auto run = [&](const std::string& args) { return test::run_tool_streams(ATTENDRE_GENERATE_BINARY, args); };
  const std::vector<uint32_t> prompt = model.tokenizer().encode(kText);
  REQUIRE(prompt.size() > 6);  // distances past the window of 3

  // The float64 reference through the tool and through the library agree exactly.
  test::ToolStreams r = run(base + " --lm-infinite 3 --device cpu --json " + quote(dir / "cpu.json") + " --logits " +
                            quote(dir / "cpu.npy"));
  INFO(r.err);
  REQUIRE(r.code == 0);
  const nlohmann::json cpu = read_json(dir / "cpu.json");
  const StackConfig config = model.stack_config(tool_default(model, 3));
  reference::Stack stack(config, model.weights());
  GenerateOptions options;
  options.max_tokens = 6;
  options.stop_tokens = model.tokenizer().stop_tokens();
  options.prompt_logits = true;
  const GenerateResult library = generate(stack, prompt, options);
  CHECK(cpu["generated_ids"] == library.tokens);
  CHECK(cpu["memory"]["blocks"][1]["lm_infinite"] == 3);
  const npy::Array logits = npy::read_expect(dir / "cpu.npy", npy::DType::f32, 2);
  const auto values = logits.as<float>();
  CHECK(test::max_difference({values.begin(), values.end()}, library.prompt_logits) < 1e-6);
  // The cap changes the logits: the comparison can fail.
  CHECK(test::max_difference(library.prompt_logits,
                             test::dense_logits(model, model.stack_config(test::unbounded(prompt.size(), 4)), prompt)) > 1e-3);

  // The GPU generates the same tokens; "--lm-infinite=3" is the same flag.
  r = run(base + " --lm-infinite=3 --json " + quote(dir / "gpu.json"));
  REQUIRE(r.code == 0);
  CHECK(read_json(dir / "gpu.json")["generated_ids"] == library.tokens);

  // Without a value the window is the trained context (96), the next option stays an option.
  r = test::run_tool_streams(ATTENDRE_GENERATE_BINARY, "--lm-infinite --model " + quote(path) + " --prompt " + quote(kText) +
                                                           " --max-tokens 2 --json " + quote(dir / "default.json"));
  REQUIRE(r.code == 0);
  CHECK(read_json(dir / "default.json")["memory"]["blocks"][0]["lm_infinite"] == model.info().context_length);
  CHECK(run("--help").out.find("--lm-infinite [N]") != std::string::npos);

  const std::string tool = "attendre-generate";
  check_refused(run(base + " --lm-infinite 0"), 2, tool, "--lm-infinite: expected a positive integer, got '0'");
  check_refused(run(base + " --lm-infinite wide"), 2, tool, "--lm-infinite: expected a positive integer, got 'wide'");
  check_refused(run(base + " --lm-infinite 3 --lm-infinite 4"), 2, tool, "--lm-infinite");
}

TEST_CASE("attendre-perplexity: --lm-infinite N is the library's perplexity under LM-Infinite, with --compare too") {
  test::TempDir dir;
  const fs::path path = test::write_fixture(dir.path, test::FixtureShape::for_type("llama", TensorType::f32), 59);
  Model model = Model::open(path);
  {
    std::ofstream text(dir / "text.txt");
    text << kText;
  }
  const std::string base = "--model " + quote(path) + " --file " + quote(dir / "text.txt");
  auto run = [&](const std::string& args) { return test::run_tool_streams(ATTENDRE_PERPLEXITY_BINARY, args); };
  test::ToolStreams r = run(base + " --lm-infinite 4 --device cpu --json " + quote(dir / "p.json"));
  INFO(r.err);
  REQUIRE(r.code == 0);
  const std::vector<uint32_t> tokens = model.tokenizer().encode(kText);
  reference::Stack stack(model.stack_config(tool_default(model, 4)), model.weights());
  const double expected = perplexity(stack, tokens).perplexity;
  const nlohmann::json json = read_json(dir / "p.json");
  CHECK(json["perplexity"].get<double>() == doctest::Approx(expected).epsilon(1e-12));
  CHECK(json["results"][0]["memory"]["blocks"][0]["lm_infinite"] == 4);

  // --compare keeps working and applies the window to every setting.
  r = run(base + " --lm-infinite 4 --compare full,fifo --json " + quote(dir / "c.json"));
  REQUIRE(r.code == 0);
  const nlohmann::json compared = read_json(dir / "c.json");
  REQUIRE(compared["results"].size() == 2);
  for (const auto& result : compared["results"]) CHECK(result["memory"]["blocks"][1]["lm_infinite"] == 4);
  // M = 96 holds the whole text: the fifo row is the full context's, both capped.
  CHECK(compared["results"][1]["perplexity"].get<double>() == doctest::Approx(expected).epsilon(1e-4));
  CHECK(compared["results"][0]["perplexity"].get<double>() == doctest::Approx(expected).epsilon(1e-4));

  const std::string tool = "attendre-perplexity";
  check_refused(run(base + " --lm-infinite -2"), 2, tool, "-2");
  check_refused(run(base + " --lm-infinite 4294967296"), 2, tool, "--lm-infinite");
  const fs::path t5 = test::write_fixture(dir.path, test::FixtureShape::for_type("t5", TensorType::f32), 61);
  check_refused(run("--model " + quote(t5) + " --file " + quote(dir / "text.txt")), 1, tool,
                "t5 is not a decoder: perplexity scores a causal stack's next tokens");
}

TEST_CASE("attendre-generate: a T5 model encodes the prompt, then decodes from its start token as the library does") {
  test::TempDir dir;
  const fs::path path = test::write_fixture(dir.path, test::FixtureShape::for_type("t5", TensorType::f32), 67);
  Model model = Model::open(path);
  const std::string base = "--model " + quote(path) + " --prompt " + quote(kText) + " --max-tokens 5";
  auto run = [&](const std::string& args) { return test::run_tool_streams(ATTENDRE_GENERATE_BINARY, args); };

  const std::vector<uint32_t> input = model.tokenizer().encode(kText);
  // The tool's defaults: the whole input, bidirectional; every output kept.
  reference::EncoderDecoder library_model(
      model.encoder_decoder_config(test::unbounded_encoder_decoder(static_cast<uint32_t>(input.size()), 64, 5)),
      model.weights());
  GenerateOptions options;
  options.max_tokens = 5;
  options.stop_tokens = model.tokenizer().stop_tokens();
  const GenerateResult library = generate(library_model, input, *model.info().decoder_start_token, options);
  REQUIRE_FALSE(library.tokens.empty());
  for (const char* device : {"cpu", "gpu"}) {
    INFO(device);
    const test::ToolStreams r = run(base + " --device " + device + " --json " + quote(dir / "t5.json"));
    INFO(r.err);
    REQUIRE(r.code == 0);
    const nlohmann::json json = read_json(dir / "t5.json");
    CHECK(json["prompt_ids"] == input);
    CHECK(json["generated_ids"] == library.tokens);
    CHECK(json["text"] == model.tokenizer().decode(library.tokens));
    CHECK(r.out.rfind(json["text"].get<std::string>() + "\n", 0) == 0);
    CHECK(json["memory"]["encoder"]["blocks"][0]["causal"] == false);
    CHECK(json["memory"]["encoder_memory"] == input.size());
  }
  // A bounded encoder is the memory options' business, as for a decoder.
  REQUIRE(run(base + " --chunk 4 --kv-capacity 8 --q-capacity 2 --json " + quote(dir / "b.json")).code == 0);
  CHECK(read_json(dir / "b.json")["memory"]["encoder"]["blocks"][1]["M"] == 8);

  const std::string tool = "attendre-generate";
  check_refused(run(base + " --logits " + quote(dir / "l.npy")), 2, tool, "--logits: t5's encoder emits no logits");
  check_refused(run(base + " --flush"), 2, tool, "--flush: t5's encoder drains its input");
  check_refused(run(base + " --lm-infinite"), 1, tool, "LM-Infinite caps RoPE distances, and no block of this stack uses RoPE");
  const fs::path encoder = test::write_fixture(dir.path, test::FixtureShape::for_type("t5encoder", TensorType::f32), 71);
  check_refused(run("--model " + quote(encoder) + " --prompt x"), 1, tool, "t5encoder is an encoder alone: it generates no tokens");
}

#endif
