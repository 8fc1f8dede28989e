// attendre-tokenize, attendre-generate and attendre-perplexity run as a user
// would: their command lines exactly as documented, their outputs against
// the library and the dense forward (real files, and generated fixtures for
// --lm-infinite and T5), and every error path a one-line message, a
// non-zero exit and no output file.
#if defined(ATTENDRE_TOKENIZE_BINARY) && defined(ATTENDRE_GENERATE_BINARY) && defined(ATTENDRE_PERPLEXITY_BINARY)

#include "no_device/gguf_test_support.hpp"
#include "model_checks.hpp"
#include "model_fixtures.hpp"
#include "support.hpp"

#include "npy/npy.hpp"
#include <attendre/perplexity.hpp>
#include <attendre/reference/encoder_decoder.hpp>

#include <nlohmann/json.hpp>

#include <fstream>

using namespace attendre;
namespace fs = std::filesystem;
using gguf::TensorType;

namespace {

std::string quote(const std::string& s) { return "'" + s + "'"; }

// One line on stderr, prefixed with the tool's name, nothing on stdout.
void check_one_line_error(const test::ToolStreams& r, int code, const std::string& tool, const std::string& needle) {
  INFO(r.err);
  CHECK(r.code == code);
  CHECK(r.out.empty());
  CHECK(r.err.rfind(tool + ": ", 0) == 0);
  CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  CHECK(r.err.find(needle) != std::string::npos);
}

// Nothing at `path`, nor a staging file beside it.
void check_no_file(const fs::path& path) {
  CHECK_FALSE(fs::exists(path));
  for (const auto& entry : fs::directory_iterator(path.parent_path()))
    CHECK(entry.path().filename().string().rfind(path.filename().string(), 0) != 0);
}

nlohmann::json read_json(const fs::path& path) {
  std::ifstream in(path);
  REQUIRE(in);
  return nlohmann::json::parse(in);
}

void write_text(const fs::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
}

const char* kStoriesText =
    "Once upon a time, there was a little girl named Lily. She loved to play outside in the park. One day, she saw a "
    "big, red ball. She wanted to play with it, but it was too high. She asked her mom to help her. Her mom smiled and "
    "said, \"Of course, Lily!\" They played together all day long. Lily was very happy.";

// The tools' default plan for a decoder (S = 64, M = the trained context,
// fifo, causal) with LM-Infinite at `n_local`.
MemoryPlan tool_default(const Model& model, uint32_t n_local) {
  MemoryPlan plan;
  plan.chunk = 64;
  plan.all.kv.capacity = std::max(model.info().context_length, plan.chunk);
  plan.all.lm_infinite = {true, n_local};
  return plan;
}

// attendre-perplexity on stories260K and kStoriesText (in a temporary
// folder): `base` names both, (*run)(args) runs the tool; open() is null
// (the test skips) without the shared models.
struct StoryPerplexity {
  static std::unique_ptr<const StoryPerplexity> open() {
    const auto models = test::shared_models();
    return models ? std::make_unique<const StoryPerplexity>(*models) : nullptr;
  }
  test::TempDir dir;
  fs::path path;
  std::string base;
  explicit StoryPerplexity(const fs::path& models) : path(models / "stories260K.gguf") {
    write_text(dir / "story.txt", kStoriesText);
    base = "--model " + quote(path) + " --file " + quote(dir / "story.txt");
  }
  test::ToolStreams operator()(const std::string& args) const {
    return test::run_tool_streams(ATTENDRE_PERPLEXITY_BINARY, args);
  }
};

constexpr const char* kText = "the cat sat on the mat once upon a time the cat sat on the mat";

}  // namespace

TEST_CASE("attendre-tokenize: ids as one JSON line, the options as documented, the vectors of llama.cpp") {
  const auto models = test::shared_models();
  if (!models) return;
  test::TempDir dir;
  const std::string stories = quote(*models / "stories260K.gguf");
  auto tokenize = [&](const std::string& args) { return test::run_tool_streams(ATTENDRE_TOKENIZE_BINARY, args); };
  test::ToolStreams r = tokenize("--model " + stories + " --text 'Once upon a time'");
  CHECK(r.code == 0);
  CHECK(r.out == "[1, 403, 407, 261, 378]\n");
  CHECK(tokenize("--model " + stories + " --text 'Once upon a time' --no-bos").out == "[403, 407, 261, 378]\n");
  write_text(dir / "prompt.txt", "Once upon a time");
  CHECK(tokenize("--model " + stories + " --file " + quote(dir / "prompt.txt")).out == "[1, 403, 407, 261, 378]\n");
  CHECK(tokenize("--model " + stories + " --text '</s>' --no-bos --parse-special").out == "[2]\n");
  CHECK(tokenize("--model " + stories + " --text '</s>' --no-bos").out != "[2]\n");
  r = tokenize("--model " + stories + " --decode '1 403 407 261 378'");
  CHECK(r.code == 0);
  CHECK(r.out == "Once upon a time\n");
  const std::string help = tokenize("--help").out;
  for (const char* flag : {"--model", "--text", "--file", "--no-bos", "--parse-special", "--decode"})
    CHECK(help.find(flag) != std::string::npos);

  // A vocabulary-only file and its first llama.cpp vector (no BOS, no specials).
  const fs::path vocab = *models / "vocab" / "ggml-vocab-llama-bpe.gguf";
  std::ifstream inp(vocab.string() + ".inp"), out(vocab.string() + ".out");
  std::string text, line, expected;
  while (std::getline(inp, line) && line != "__ggml_vocab_test__") text += (text.empty() ? "" : "\n") + line;
  std::getline(out, expected);
  std::string json = "[";
  std::istringstream ids(expected);
  for (std::string id; ids >> id;) json += (json.size() > 1 ? ", " : "") + id;
  write_text(dir / "vector.txt", text);
  CHECK(tokenize("--model " + quote(vocab) + " --file " + quote(dir / "vector.txt") + " --no-bos").out == json + "]\n");

  const std::string tool = "attendre-tokenize";
  check_one_line_error(tokenize("--text x"), 2, tool, "missing required option --model");
  check_one_line_error(tokenize("--model " + stories), 2, tool, "give exactly one of --text, --file and --decode");
  check_one_line_error(tokenize("--model " + stories + " --text a --file b"), 2, tool, "exactly one of");
  check_one_line_error(tokenize("--model " + stories + " --text a --bogus"), 2, tool, "unknown option '--bogus'");
  check_one_line_error(tokenize("--model " + stories + " --decode '1 x'"), 2, tool, "--decode: expected a non-negative integer, got 'x'");
  check_one_line_error(tokenize("--model " + stories + " --decode '512'"), 1, tool, "token id 512 is out of range");
  check_one_line_error(tokenize("--model " + quote(dir / "absent.gguf") + " --text a"), 1, tool, "cannot open");
  check_one_line_error(tokenize("--model " + stories + " --file " + quote(dir / "absent.txt")), 1, tool, "--file");
  check_one_line_error(tokenize("--model " + quote(dir / "prompt.txt") + " --text a"), 1, tool, "prompt.txt");
  check_one_line_error(tokenize("--model " + stories + " --file " + quote(dir.path.string())), 1, tool,
                       "--file " + dir.path.string() + ": is a folder, not a text file");
}

TEST_CASE("attendre-generate: llama.cpp's continuation, the JSON and logits files, sampling and memory options") {
  const auto models = test::shared_models();
  if (!models) return;
  test::TempDir dir;
  const fs::path path = *models / "stories260K.gguf";
  const std::string stories = "--model " + quote(path) + " --prompt 'Once upon a time'";
  auto run = [&](const std::string& args) { return test::run_tool_streams(ATTENDRE_GENERATE_BINARY, args); };
  const std::string expected = test::kRealModels[0].continuation;

  test::ToolStreams r = run(stories + " --max-tokens 32 --full-context --json " + quote(dir / "out.json") + " --logits " +
                            quote(dir / "logits.npy"));
  INFO(r.err);
  REQUIRE(r.code == 0);
  CHECK(r.out == expected + "\n");
  const nlohmann::json json = read_json(dir / "out.json");
  CHECK(json["prompt_ids"] == std::vector<uint32_t>{1, 403, 407, 261, 378});
  CHECK(json["generated_ids"].size() == 32);
  CHECK(json["text"] == expected);
  CHECK(json["stop_reason"] == "budget");
  CHECK(json["read_tokens_per_s"].get<double>() > 0.0);
  CHECK(json["generate_tokens_per_s"].get<double>() > 0.0);
  CHECK(json["peak_gpu_bytes"].get<uint64_t>() > 0);
  CHECK(json["memory"]["blocks"][0]["M"] == 64);  // the full context: 5 + 32 positions, but M >= S = 64
  // The last decode step's profile: one submission of every block's kernels.
  const nlohmann::json& step = json["decode_step"];
  CHECK(step["submits"] == 1);
  CHECK(step["dispatches"].get<uint32_t>() >= 5 * json["memory"]["blocks"].size());
  CHECK(step["barriers"].get<uint32_t>() > 0);
  CHECK(step["copies"].get<uint32_t>() > 0);
  CHECK(step["host_ms"].get<double>() > 0.0);
  CHECK(step["wait_ms"].get<double>() > 0.0);
  CHECK_FALSE(step.contains("kernels"));
  // --dispatches: the same text; the last decode step's kernels, every dispatch counted once.
  r = run(stories + " --max-tokens 4 --full-context --dispatches --json " + quote(dir / "profiled.json"));
  REQUIRE(r.code == 0);
  CHECK(r.out == expected.substr(0, r.out.size() - 1) + "\n");
  const nlohmann::json profiled = read_json(dir / "profiled.json")["decode_step"];
  uint32_t counted = 0;
  double previous = 1e300;
  for (const nlohmann::json& k : profiled["kernels"]) {
    counted += k["dispatches"].get<uint32_t>();
    CHECK(k["ms"].get<double>() <= previous);  // longest first
    previous = k["ms"].get<double>();
    CHECK(r.err.find("attendre-generate: decode step: " + k["name"].get<std::string>()) != std::string::npos);
  }
  CHECK(counted == profiled["dispatches"].get<uint32_t>());
  CHECK(profiled["kernels"].size() > 3);
  Model model = Model::open(path).value_or_throw();
  const std::vector<uint32_t> prompt = {1, 403, 407, 261, 378};
  const std::vector<float> dense = test::dense_logits(model, model.stack_config(test::unbounded(5, 4)).value_or_throw(), prompt);
  const npy::Array logits = npy::read_expect(dir / "logits.npy", npy::DType::f32, 2);
  CHECK(logits.shape == std::vector<int64_t>{5, 512});
  const auto values = logits.as<float>();
  CHECK(test::max_difference({values.begin(), values.end()}, dense) < 1e-3);

  // The defaults (M = the trained context) hold the whole text too; the cpu reference agrees.
  CHECK(run(stories + " --max-tokens 32").out == expected + "\n");
  // --verbose names each kernel family's variant on stderr, one line each;
  // with features switched off, the fallbacks continue the text the same way.
  r = test::run_tool_streams(ATTENDRE_GENERATE_BINARY, stories + " --max-tokens 32 --verbose",
                             "ATTENDRE_DISABLE=16bit,shuffle,large_workgroups ");
  CHECK(r.out == expected + "\n");
  CHECK(r.err.find("attendre-generate: fp16 weights: unpackHalf2x16 of 32-bit words (16bit switched off)\n") !=
        std::string::npos);
  CHECK(r.err.find("attendre-generate: matmul (block types): ") != std::string::npos);
  CHECK(r.err.find("attendre-generate: workgroups: 128 invocations") != std::string::npos);
  CHECK(run(stories + " --max-tokens 32 --device cpu --chunk 3 --json " + quote(dir / "cpu.json")).out == expected + "\n");
  CHECK(!read_json(dir / "cpu.json").contains("decode_step"));  // the reference has no device steps
  // fp16 activations (the normed and FFN rows the products read) continue
  // llama.cpp's text token for token, on the GPU and on the reference.
  REQUIRE(run(stories + " --max-tokens 32 --fp16-activations --json " + quote(dir / "h.json")).out == expected + "\n");
  CHECK(read_json(dir / "h.json")["memory"]["activations"] == "f16");
  CHECK(json["memory"]["activations"] == "f32");
  CHECK(run(stories + " --max-tokens 32 --fp16-activations --device cpu").out == expected + "\n");
  // --fp16-memory applies to the full context too (it once kept fp32 there).
  REQUIRE(run(stories + " --max-tokens 32 --full-context --fp16-memory --json " + quote(dir / "m.json")).out ==
          expected + "\n");
  for (const auto& block : read_json(dir / "m.json")["memory"]["blocks"]) CHECK(block["storage"] == "f16");
  for (const auto& block : json["memory"]["blocks"]) CHECK(block["storage"] == "f32");

  // Sampling: a seed repeats itself, another seed differs.
  std::vector<nlohmann::json> sampled;
  for (const char* seed : {"5", "5", "6"}) {
    REQUIRE(run(stories + " --max-tokens 24 --temperature 1.2 --top-p 0.95 --seed " + seed + " --json " +
                quote(dir / "s.json")).code == 0);
    sampled.push_back(read_json(dir / "s.json")["generated_ids"]);
  }
  CHECK(sampled[0] == sampled[1]);
  CHECK(sampled[0] != sampled[2]);

  // Bounded memories with waiting queries and a per-block override reach the stack.
  r = run(stories + " --max-tokens 8 --chunk 4 --q-capacity 4 --kv-capacity 16 --top-k 8 --policy lfa --lambda 0.001 "
                    "--sinks 2 --no-causal --layer 1-2:kv-capacity=24,policy=lra_sum --flush --json " +
          quote(dir / "b.json"));
  REQUIRE(r.code == 0);
  const nlohmann::json bounded = read_json(dir / "b.json")["memory"];
  CHECK(bounded["chunk"] == 4);
  CHECK(bounded["flush"] == true);
  CHECK(bounded["blocks"][0]["M"] == 16);
  CHECK(bounded["blocks"][0]["N"] == 4);
  CHECK(bounded["blocks"][0]["K"] == 8);
  CHECK(bounded["blocks"][0]["policy"] == "lfa");
  CHECK(bounded["blocks"][0]["sinks"] == 2);
  CHECK(bounded["blocks"][0]["causal"] == false);
  CHECK(bounded["blocks"][2]["M"] == 24);
  CHECK(bounded["blocks"][2]["policy"] == "lra_sum");
  CHECK(bounded["blocks"][3]["M"] == 16);

  const std::string help = run("--help").out;
  for (const char* flag : {"--prompt-file", "--max-tokens", "--temperature", "--top-p", "--seed", "--logits", "--json",
                           "--chunk", "--q-capacity", "--kv-capacity", "--top-k", "--policy", "--lambda", "--init-k",
                           "--sinks", "--layer", "--flush", "--full-context", "--fp16-activations"})
    CHECK(help.find(flag) != std::string::npos);
}

TEST_CASE("attendre-generate: bad arguments and files exit non-zero with one line and write no file") {
  const auto models = test::shared_models();
  if (!models) return;
  test::TempDir dir;
  const std::string stories = "--model " + quote(*models / "stories260K.gguf") + " --prompt 'Once upon a time'";
  const std::string json = " --json " + quote(dir / "out.json") + " --logits " + quote(dir / "out.npy");
  auto run = [&](const std::string& args) { return test::run_tool_streams(ATTENDRE_GENERATE_BINARY, args + json); };
  const std::string tool = "attendre-generate";
  check_one_line_error(run("--prompt x"), 2, tool, "missing required option --model");
  check_one_line_error(run(stories + " --prompt-file x"), 2, tool, "give exactly one of --prompt and --prompt-file");
  check_one_line_error(run(stories + " --max-tokens 0"), 2, tool, "--max-tokens: expected a positive integer, got '0'");
  check_one_line_error(run(stories + " --top-p 0.5"), 2, tool, "--top-p and --seed apply to sampling");
  check_one_line_error(run(stories + " --temperature 1 --top-p 1.5"), 2, tool, "--top-p: expected a number in (0, 1]");
  // The refused value as given, neither rounded to an accepted one nor in 309 digits.
  check_one_line_error(run(stories + " --temperature 1 --top-p 1.0000000000000002"), 2, tool, "got 1.0000000000000002 (see");
  check_one_line_error(run(stories + " --temperature 1 --top-p 1e308"), 2, tool, "got 1e+308 (see");
  check_one_line_error(run(stories + " --full-context --kv-capacity 64"), 2, tool, "--full-context fixes");
  check_one_line_error(run(stories + " --policy fifo --lambda 0.1"), 2, tool, "--lambda only applies to --policy lfa");
  check_one_line_error(run(stories + " --policy wrong"), 2, tool, "--policy: expected one of fifo");
  check_one_line_error(run(stories + " --layer 7:kv-capacity=64"), 2, tool, "the model has 5 blocks (0-4)");
  check_one_line_error(run(stories + " --layer 0:size=64"), 2, tool, "unknown setting 'size'");
  check_one_line_error(run(stories + " --causal --no-causal"), 2, tool, "--causal and --no-causal are exclusive");
  check_one_line_error(run(stories + " --kv-capacity 4 --chunk 8"), 1, tool, "(M is --kv-capacity, S is --chunk");
  check_one_line_error(run("--model " + quote(dir / "absent.gguf") + " --prompt x"), 1, tool, "cannot open");
  check_one_line_error(run(stories + " --device tpu"), 2, tool, "--device: expected cpu or gpu");
  const std::string model = "--model " + quote(*models / "stories260K.gguf");
  check_one_line_error(run(model + " --prompt-file " + quote(dir.path.string())), 1, tool,
                       "--prompt-file " + dir.path.string() + ": is a folder, not a text file");
  check_no_file(dir / "out.json");
  check_no_file(dir / "out.npy");
  const test::ToolStreams r = test::run_tool_streams(
      ATTENDRE_GENERATE_BINARY, stories + " --json " + quote(dir / "missing/out.json"));
  check_one_line_error(r, 1, tool, "--json " + (dir / "missing/out.json") + ": cannot write there");
}

TEST_CASE("attendre-perplexity: one table for --compare, full context equals the dense forward's perplexity") {
  const std::unique_ptr<const StoryPerplexity> run = StoryPerplexity::open();
  if (!run) return;
  const test::TempDir& dir = run->dir;
  const fs::path& path = run->path;
  const std::string& base = run->base;

  const test::ToolStreams r =
      (*run)(base + " --compare full,fifo,sinks,lra_sum,lfa --chunk 8 --kv-capacity 24 --lambda 0.001 --json " +
          quote(dir / "p.json"));
  INFO(r.err);
  REQUIRE(r.code == 0);
  std::istringstream table(r.out);
  std::string line;
  std::vector<std::string> rows;
  while (std::getline(table, line)) rows.push_back(line.substr(0, line.find(' ')));
  CHECK(rows == std::vector<std::string>{"setting", "full", "fifo", "sinks", "lra_sum", "lfa"});
  CHECK(r.out.find("perplexity") != std::string::npos);
  CHECK(r.out.find("tokens/s") != std::string::npos);
  CHECK(r.out.find("GPU MiB") != std::string::npos);
  for (const char* setting : {"[full]", "[fifo]", "[sinks]", "[lra_sum]", "[lfa]"}) CHECK(r.err.find(setting) != std::string::npos);

  const nlohmann::json json = read_json(dir / "p.json");
  REQUIRE(json["results"].size() == 5);
  CHECK(json["results"][2]["memory"]["blocks"][0]["sinks"] == 4);
  CHECK(json["results"][4]["memory"]["blocks"][0]["lambda"] == 0.001);
  CHECK(json["results"][1]["memory"]["blocks"][0]["M"] == 24);
  Model model = Model::open(path).value_or_throw();
  const std::vector<uint32_t> tokens = model.tokenizer().encode(kStoriesText).value_or_throw();
  CHECK(json["tokens"] == tokens.size());
  const uint32_t vocab = 512;
  const std::vector<float> logits = test::dense_logits(model, model.stack_config(test::unbounded(tokens.size(), 8)).value_or_throw(), tokens);
  double nll = 0.0;
  for (size_t t = 0; t + 1 < tokens.size(); ++t) {
    double sum = 0.0;
    for (uint32_t v = 0; v < vocab; ++v) sum += std::exp(static_cast<double>(logits[t * vocab + v]));
    nll += std::log(sum) - logits[t * vocab + tokens[t + 1]];
  }
  const double dense = std::exp(nll / static_cast<double>(tokens.size() - 1));
  CHECK(json["results"][0]["perplexity"].get<double>() == doctest::Approx(dense).epsilon(1e-4));
  CHECK(json["perplexity"] == json["results"][0]["perplexity"]);
  for (const auto& result : json["results"]) {
    CHECK(result["peak_gpu_bytes"].get<uint64_t>() > 0);
    CHECK(result["tokens_per_s"].get<double>() > 0.0);
  }
  // A window of 24 positions forgets: its perplexity is not the full context's.
  CHECK(json["results"][1]["perplexity"].get<double>() != doctest::Approx(dense).epsilon(1e-3));

  const std::string tool = "attendre-perplexity";
  check_one_line_error((*run)(base + " --no-causal"), 2, tool, "--no-causal: the logits at t must predict token t+1");
  check_one_line_error((*run)(base + " --compare full,bogus"), 2, tool, "--compare: expected full, sinks or a policy");
  check_one_line_error((*run)(base + " --compare fifo --policy lru"), 2, tool, "--policy and --compare are exclusive");
  check_one_line_error((*run)("--model " + quote(path)), 2, tool, "missing required option --file");
  write_text(dir / "empty.txt", "");
  check_one_line_error((*run)("--model " + quote(path) + " --file " + quote(dir / "empty.txt") + " --json " +
                           quote(dir / "e.json")),
                       1, tool, "1 tokens, perplexity needs at least 2");
  check_one_line_error((*run)("--model " + quote(path) + " --file " + quote(dir.path.string()) + " --json " +
                           quote(dir / "e.json")),
                       1, tool, "--file " + dir.path.string() + ": is a folder, not a text file");
  check_no_file(dir / "e.json");
}

TEST_CASE("attendre-perplexity --ctx N: llama-perplexity's windows, --kl-divergence from full, their JSON and errors") {
  const std::unique_ptr<const StoryPerplexity> run = StoryPerplexity::open();
  if (!run) return;
  const test::TempDir& dir = run->dir;
  const fs::path& path = run->path;
  const std::string& base = run->base;
  Model model = Model::open(path).value_or_throw();
  const std::vector<uint32_t> tokens = model.tokenizer().encode(kStoriesText).value_or_throw();
  const auto [dense, scored] = test::dense_windowed_perplexity(model, tokens, 16, model.tokenizer().bos());

  // full is not named: it runs last, as the KL base.
  const test::ToolStreams r = (*run)(base + " --ctx 16 --compare fifo,lra_sum --chunk 4 --kv-capacity 8 --kl-divergence --json " +
                                  quote(dir / "w.json"));
  INFO(r.err);
  REQUIRE(r.code == 0);
  for (const char* column : {"mean KLD", "median KLD", "99.0% KLD", "same top p"}) CHECK(r.out.find(column) != std::string::npos);
  const nlohmann::json json = read_json(dir / "w.json");
  CHECK(json["ctx"] == 16);
  CHECK(json["windows"] == tokens.size() / 16);
  CHECK(json["tokens"] == tokens.size());
  CHECK(json["predicted"] == scored);
  CHECK(scored == tokens.size() / 16 * 7);
  REQUIRE(json["results"].size() == 3);
  CHECK(json["results"][2]["setting"] == "full");
  CHECK(json["results"][2]["memory"]["blocks"][0]["M"] == 16);  // the memory holds a window
  CHECK(json["results"][0]["memory"]["blocks"][0]["M"] == 8);
  CHECK(json["results"][2]["perplexity"].get<double>() == doctest::Approx(dense).epsilon(1e-5));
  CHECK(json["perplexity"] == json["results"][0]["perplexity"]);
  const nlohmann::json& full_kl = json["results"][2]["kl_divergence"];
  CHECK(full_kl["mean"] == 0.0);
  CHECK(full_kl["same_top_p"] == 1.0);
  CHECK(full_kl["tokens"] == scored);
  for (size_t i = 0; i < 2; ++i) {
    const nlohmann::json& kl = json["results"][i]["kl_divergence"];
    CHECK(kl["mean"].get<double>() > 0.0);
    CHECK(kl["median"].get<double>() <= kl["p99"].get<double>());
    CHECK(kl["p99"].get<double>() <= kl["maximum"].get<double>());
    CHECK(kl["same_top_p"].get<double>() < 1.0);
    CHECK(json["results"][i]["peak_gpu_bytes"].get<uint64_t>() > 0);
  }

  // --full-context alone over the same windows: the same figure; windows of 3 tokens score one each.
  const test::ToolStreams alone = (*run)(base + " --ctx 16 --full-context --chunk 4 --json " + quote(dir / "f.json"));
  REQUIRE(alone.code == 0);
  CHECK(read_json(dir / "f.json")["perplexity"] == json["results"][2]["perplexity"]);
  CHECK_FALSE(read_json(dir / "f.json")["results"][0].contains("kl_divergence"));
  REQUIRE((*run)(base + " --ctx 3 --full-context --json " + quote(dir / "t.json")).code == 0);
  const nlohmann::json tiny = read_json(dir / "t.json");
  CHECK(tiny["windows"] == tokens.size() / 3);
  CHECK(tiny["predicted"] == tokens.size() / 3);
  CHECK(tiny["perplexity"].get<double>() ==
        doctest::Approx(test::dense_windowed_perplexity(model, tokens, 3, model.tokenizer().bos()).first).epsilon(1e-5));

  const std::string tool = "attendre-perplexity";
  check_one_line_error((*run)(base + " --ctx 0"), 2, tool, "--ctx: expected a positive integer, got '0'");
  check_one_line_error((*run)(base + " --ctx 2"), 2, tool, "--ctx: 2 scores no token (N - 1 - N/2 per window): at least 3");
  check_one_line_error((*run)(base + " --kl-divergence"), 2, tool, "--kl-divergence needs --ctx N");
  check_one_line_error((*run)(base + " --ctx 512 --kl-divergence --json " + quote(dir / "e.json")), 1, tool,
                       std::to_string(tokens.size()) + " tokens, --ctx 512 needs at least 1024 (two windows)");
  check_no_file(dir / "e.json");
}

TEST_CASE("attendre-generate: --lm-infinite [N] is the library's LM-Infinite, the window defaults to the context") {
  test::TempDir dir;
  const fs::path path = test::write_fixture(dir.path, test::FixtureShape::for_type("llama", TensorType::f32), 53);
  Model model = Model::open(path).value_or_throw();
  const std::string base = "--model " + quote(path) + " --prompt " + quote(kText) + " --max-tokens 6";
  auto run = [&](const std::string& args) { return test::run_tool_streams(ATTENDRE_GENERATE_BINARY, args); };
  const std::vector<uint32_t> prompt = model.tokenizer().encode(kText).value_or_throw();
  REQUIRE(prompt.size() > 6);  // distances past the window of 3

  // The float64 reference through the tool and through the library agree exactly.
  test::ToolStreams r = run(base + " --lm-infinite 3 --device cpu --json " + quote(dir / "cpu.json") + " --logits " +
                            quote(dir / "cpu.npy"));
  INFO(r.err);
  REQUIRE(r.code == 0);
  const nlohmann::json cpu = read_json(dir / "cpu.json");
  const StackConfig config = model.stack_config(tool_default(model, 3)).value_or_throw();
  reference::Stack stack(config, model.weights());
  GenerateOptions options;
  options.max_tokens = 6;
  options.stop_tokens = model.tokenizer().stop_tokens();
  options.prompt_logits = true;
  const GenerateResult library = generate(stack, prompt, options).value_or_throw();
  CHECK(cpu["generated_ids"] == library.tokens);
  CHECK(cpu["memory"]["blocks"][1]["lm_infinite"] == 3);
  const npy::Array logits = npy::read_expect(dir / "cpu.npy", npy::DType::f32, 2);
  const auto values = logits.as<float>();
  CHECK(test::max_difference({values.begin(), values.end()}, library.prompt_logits) < 1e-6);
  // The cap changes the logits: the comparison can fail.
  CHECK(test::max_difference(library.prompt_logits,
                             test::dense_logits(model, model.stack_config(test::unbounded(prompt.size(), 4)).value_or_throw(), prompt)) > 1e-3);

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
  check_one_line_error(run(base + " --lm-infinite 0"), 2, tool, "--lm-infinite: expected a positive integer, got '0'");
  check_one_line_error(run(base + " --lm-infinite wide"), 2, tool, "--lm-infinite: expected a positive integer, got 'wide'");
  check_one_line_error(run(base + " --lm-infinite 3 --lm-infinite 4"), 2, tool, "--lm-infinite");
}

TEST_CASE("attendre-perplexity: --lm-infinite N is the library's perplexity under LM-Infinite, with --compare too") {
  test::TempDir dir;
  const fs::path path = test::write_fixture(dir.path, test::FixtureShape::for_type("llama", TensorType::f32), 59);
  Model model = Model::open(path).value_or_throw();
  write_text(dir / "text.txt", kText);
  const std::string base = "--model " + quote(path) + " --file " + quote(dir / "text.txt");
  auto run = [&](const std::string& args) { return test::run_tool_streams(ATTENDRE_PERPLEXITY_BINARY, args); };
  test::ToolStreams r = run(base + " --lm-infinite 4 --device cpu --json " + quote(dir / "p.json"));
  INFO(r.err);
  REQUIRE(r.code == 0);
  const std::vector<uint32_t> tokens = model.tokenizer().encode(kText).value_or_throw();
  reference::Stack stack(model.stack_config(tool_default(model, 4)).value_or_throw(), model.weights());
  const double expected = perplexity(stack, tokens).value_or_throw().perplexity;
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
  check_one_line_error(run(base + " --lm-infinite -2"), 2, tool, "-2");
  check_one_line_error(run(base + " --lm-infinite 4294967296"), 2, tool, "--lm-infinite");
  const fs::path t5 = test::write_fixture(dir.path, test::FixtureShape::for_type("t5", TensorType::f32), 61);
  check_one_line_error(run("--model " + quote(t5) + " --file " + quote(dir / "text.txt")), 1, tool,
                "t5 is not a decoder: perplexity scores a causal stack's next tokens");
}

TEST_CASE("attendre-generate: a T5 model encodes the prompt, then decodes from its start token as the library does") {
  test::TempDir dir;
  const fs::path path = test::write_fixture(dir.path, test::FixtureShape::for_type("t5", TensorType::f32), 67);
  Model model = Model::open(path).value_or_throw();
  const std::string base = "--model " + quote(path) + " --prompt " + quote(kText) + " --max-tokens 5";
  auto run = [&](const std::string& args) { return test::run_tool_streams(ATTENDRE_GENERATE_BINARY, args); };

  const std::vector<uint32_t> input = model.tokenizer().encode(kText).value_or_throw();
  // The tool's defaults: the whole input, bidirectional; every output kept.
  reference::EncoderDecoder library_model(
      model.encoder_decoder_config(test::unbounded_encoder_decoder(static_cast<uint32_t>(input.size()), 64, 5)).value_or_throw(),
      model.weights());
  GenerateOptions options;
  options.max_tokens = 5;
  options.stop_tokens = model.tokenizer().stop_tokens();
  const GenerateResult library = generate(library_model, input, *model.info().decoder_start_token, options).value_or_throw();
  REQUIRE_FALSE(library.tokens.empty());
  for (const char* device : {"cpu", "gpu"}) {
    INFO(device);
    const test::ToolStreams r = run(base + " --device " + device + " --json " + quote(dir / "t5.json"));
    INFO(r.err);
    REQUIRE(r.code == 0);
    const nlohmann::json json = read_json(dir / "t5.json");
    CHECK(json["prompt_ids"] == input);
    CHECK(json["generated_ids"] == library.tokens);
    CHECK(json["text"] == model.tokenizer().decode(library.tokens).value_or_throw());
    CHECK(r.out.rfind(json["text"].get<std::string>() + "\n", 0) == 0);
    CHECK(json["memory"]["encoder"]["blocks"][0]["causal"] == false);
    CHECK(json["memory"]["encoder_memory"] == input.size());
  }
  // A bounded encoder is the memory options' business, as for a decoder.
  REQUIRE(run(base + " --chunk 4 --kv-capacity 8 --q-capacity 2 --json " + quote(dir / "b.json")).code == 0);
  CHECK(read_json(dir / "b.json")["memory"]["encoder"]["blocks"][1]["M"] == 8);

  const std::string tool = "attendre-generate";
  check_one_line_error(run(base + " --logits " + quote(dir / "l.npy")), 2, tool, "--logits: t5's encoder emits no logits");
  check_one_line_error(run(base + " --flush"), 2, tool, "--flush: t5's encoder drains its input");
  check_one_line_error(run(base + " --lm-infinite"), 1, tool, "LM-Infinite caps RoPE distances, and no block of this stack uses RoPE");
  const fs::path encoder = test::write_fixture(dir.path, test::FixtureShape::for_type("t5encoder", TensorType::f32), 71);
  check_one_line_error(run("--model " + quote(encoder) + " --prompt x"), 1, tool, "t5encoder is an encoder alone: it generates no tokens");
}

#endif
