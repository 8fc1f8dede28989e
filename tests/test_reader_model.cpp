// The reader with a GGUF model (--model). Its streaming tokenizer gives each
// part of the templated document the ids the tokenizer gives that part
// encoded whole, however long the context (pieces cut every 64 KiB), with
// token spans that rebuild the text; the tool's run on the float64
// reference is the library's reference stack fed those ids (same retained
// positions and scores, same greedy answer); the GPU keeps what the
// reference keeps under fifo; and runs are deterministic.
#include "no_device/gguf_test_support.hpp"
#include "model_checks.hpp"
#include "model_fixtures.hpp"
#include "reader_support.hpp"

#if defined(ATTENDRE_READER_BINARY) && defined(ATTENDRE_READER_APP)

#include "attendre-reader/document.hpp"
#include "attendre-reader/memory_settings.hpp"
#include "attendre-reader/model_backend.hpp"
#include "attendre-reader/text_source.hpp"

#include <attendre/generate.hpp>
#include <attendre/model.hpp>
#include <attendre/reference/stack.hpp>

#include <fstream>

using namespace attendre;
using namespace attendre::test;
using namespace attendre::test::reader;

namespace {

// The parts of the default template around `question` and `context`.
std::vector<std::string> template_parts(const std::string& question, const std::string& context) {
  return {"Question: ", question, "\n\nContext: ", context, "\n\nAnswer:"};
}

// What the reader's tokenizer must give: each part encoded whole, its
// trailing spaces moved to the start of the next part, BOS only at the
// start, never EOS.
std::vector<uint32_t> expected_ids(const attendre::Tokenizer& tokenizer, const std::vector<std::string>& parts) {
  std::vector<uint32_t> ids;
  std::string carry;
  bool started = false;
  const auto encode = [&](const std::string& text) {
    attendre::Tokenizer::EncodeOptions options;
    options.continuation = started;
    options.more_follows = true;
    started = true;
    const std::vector<uint32_t> part = tokenizer.encode(text, options).value_or_throw();
    ids.insert(ids.end(), part.begin(), part.end());
  };
  for (const std::string& part : parts) {
    const std::string text = carry + part;
    size_t end = text.size();
    while (end > 0 && text[end - 1] == ' ') --end;
    if (end <= carry.size()) {
      carry = text;
      continue;
    }
    encode(text.substr(0, end));
    carry = text.substr(end);
  }
  if (!carry.empty()) encode(carry);
  return ids;
}

struct Walked {
  std::vector<uint32_t> ids;
  std::string rebuilt;  // every gap and token text, then the trailing text
  size_t pieces_mismatched = 0;
};

Walked walk(const attendre::Tokenizer& tokenizer, const std::string& question, const std::string& context) {
  ::reader::Document document(::reader::parse_template(::reader::kDefaultTemplate), question,
                              ::reader::text_in_memory(context, "context"), {});
  ::reader::ModelTokenStream streaming(tokenizer);
  Walked walked;
  document.walk(
      streaming,
      [&](const ::reader::TokenView& t) {
        walked.ids.push_back(static_cast<uint32_t>(t.token.id));
        walked.rebuilt.append(t.gap);
        walked.rebuilt.append(t.text);
        // A token's text is its piece, less the spaces a SentencePiece
        // tokenizer puts in front of a word (in the gap, or prefixed at the
        // document's start); a token of spaces carried over from the end of
        // the part before has them counted there.
        std::string_view piece = tokenizer.piece(static_cast<uint32_t>(t.token.id)).value_or_throw();
        const bool at_start = walked.rebuilt.size() == t.gap.size() + t.text.size();
        if (t.text != piece) {
          while (piece.starts_with(' ')) piece.remove_prefix(1);
          if (t.text != piece || !(t.gap.ends_with(' ') || at_start || piece.empty())) ++walked.pieces_mismatched;
        }
      },
      [&](std::string_view trailing) { walked.rebuilt.append(trailing); });
  return walked;
}

// About `bytes` of varied English prose with numbers, punctuation, runs of
// spaces, newlines and some non-ASCII words, with spaces at the very end.
std::string long_context(size_t bytes) {
  const std::string paragraph =
      "Once upon a time, in a  land far away, there lived a cat named Tom.\n"
      "  He liked fish (a lot) and naps: 12,345 of them!   Ünïcödé words — and 東京 too.\n\n";
  std::string text;
  for (uint64_t i = 0; text.size() < bytes; ++i) text += "Day " + std::to_string(i * 7919 % 1000) + ": " + paragraph;
  return text + "  ";
}

const std::string kStory =
    "Lily had a red ball. She played with it in the park every day. One day, the ball rolled into the pond. "
    "Lily was sad. Tom saw the ball and helped her get it back. Lily was happy and said thank you to Tom. "
    "They played with the red ball until the sun went down. Then Lily went home and told her mom about her "
    "new friend. Her mom smiled and gave her a big hug.";
const std::string kQuestion = "What color was the ball?";

// The reader's memory for these tests: S = 16, N = 8, M = 64, K = 16.
std::string memory_flags(const std::string& policy) {
  return " --policy " + policy + " --chunk 16 --q-capacity 8 --kv-capacity 64 --top-k 16 --answer-tokens 12 --quiet";
}

struct ReferenceRun {
  std::vector<attendre::MemorySnapshot> blocks;
  std::string answer;
};

// The library's reference stack under the same memory, fed `ids` in chunks
// of 16, drained, and answering greedily (the reader's answer is the first
// line of what it generates).
// `fp16`: the memories and activations in fp16 (--fp16-memory --fp16-activations).
ReferenceRun reference_run(attendre::Model& model, const std::vector<uint32_t>& ids, const std::string& policy,
                           LmInfinite lm_infinite = {}, bool fp16 = false) {
  MemoryPlan plan = model.default_memory();
  plan.all.lm_infinite = lm_infinite;
  ::reader::MemorySettings memory;
  memory.fp16_memory = memory.fp16_activations = fp16;
  memory.chunk = 16;
  memory.q_capacity = {8};
  memory.kv_capacity = {64};
  memory.top_k = {16};
  const StackConfig config =
      ::reader::configure_stack(model.stack_config(plan).value_or_throw(), memory, {policy});
  reference::Stack stack(config, model.weights());
  const int64_t n = static_cast<int64_t>(ids.size());
  const std::vector<float> last_logits = read_and_finish(stack, ids);
  ReferenceRun run;
  for (size_t b = 0; b < config.blocks.size(); ++b) run.blocks.push_back(stack.snapshot(b).value_or_throw());
  GenerateOptions options;
  options.max_tokens = 12;
  options.stop_tokens = model.tokenizer().stop_tokens();
  const GenerateResult result = generate_after(stack, last_logits, n, options).value_or_throw();
  std::string text = model.tokenizer().decode(result.tokens).value_or_throw();
  text.resize(::reader::utf8_prefix(text).valid);
  const size_t first = text.find_first_not_of(" \t\n");
  if (first != std::string::npos) {
    const size_t newline = text.find('\n', first);
    run.answer = text.substr(first, newline == std::string::npos ? std::string::npos : newline - first);
    while (!run.answer.empty() && (run.answer.back() == ' ' || run.answer.back() == '\r')) run.answer.pop_back();
  }
  return run;
}

std::string write_text(const TempDir& dir, const std::string& text) {
  const std::string path = dir / "story.txt";
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

// The run's JSON without what depends on the clock.
nlohmann::json without_timings(nlohmann::json j) {
  for (nlohmann::json& run : j.at("runs")) {
    run.erase("seconds");
    run.erase("tokens_per_second");
  }
  return j;
}

}  // namespace

TEST_CASE("attendre-reader/model tokenizer: every part gets the ids of its whole text, however long, and spans rebuild it") {
  const auto models = shared_models();
  if (!models) return;
  const std::string question = "What did  the cat like?";
  const std::string context = long_context(200 * 1024);  // four pieces of 64 KiB
  const std::string document = "Question: " + question + "\n\nContext: " + context + "\n\nAnswer:";
  for (const std::string name : {"stories260K.gguf", "vocab/ggml-vocab-llama-spm.gguf", "vocab/ggml-vocab-llama-bpe.gguf",
                                 "vocab/ggml-vocab-qwen2.gguf", "vocab/ggml-vocab-gpt-2.gguf", "vocab/ggml-vocab-phi-3.gguf"}) {
    INFO(name);
    const attendre::Tokenizer tokenizer = attendre::Tokenizer::open(*models / name).value_or_throw();
    const Walked walked = walk(tokenizer, question, context);
    const std::vector<uint32_t> expected = expected_ids(tokenizer, template_parts(question, context));
    CHECK(walked.ids.size() == expected.size());
    CHECK(walked.ids == expected);
    CHECK(walked.rebuilt == document);
    CHECK(walked.pieces_mismatched == 0);
    // No EOS before the answer, even where the vocabulary adds one.
    if (tokenizer.eos()) CHECK(std::count(walked.ids.begin(), walked.ids.end(), *tokenizer.eos()) == 0);
  }
}

TEST_CASE("attendre-reader/model tokenizer: the oracle tells a whole-document encoding from the per-part one") {
  // The comparison above has teeth: on llama3's vocabulary "?\n\n" is one
  // token of the whole text, two when the question ends a part.
  const auto models = shared_models();
  if (!models) return;
  const attendre::Tokenizer tokenizer = attendre::Tokenizer::open(*models / "vocab/ggml-vocab-llama-bpe.gguf").value_or_throw();
  const std::vector<std::string> parts = template_parts("Why?", "Because.");
  CHECK(walk(tokenizer, "Why?", "Because.").ids == expected_ids(tokenizer, parts));
  CHECK(tokenizer.encode("Question: Why?\n\nContext: Because.\n\nAnswer:").value_or_throw() != expected_ids(tokenizer, parts));
}

TEST_CASE("attendre-reader --model: a real model reads, drains and answers as the library's reference stack does") {
  const auto models = shared_models();
  if (!models) return;
  const std::filesystem::path path = *models / "stories260K.gguf";
  const TempDir dir;
  const std::string text = write_text(dir, kStory);
  const std::string common = "--model " + quote(path.string()) + " --text " + quote(text) + " --question " + quote(kQuestion);

  // The tool on the float64 reference, lra_sum: scores decide what stays.
  const ToolStreams cpu = run_reader(common + memory_flags("lra_sum") + " --device cpu --json " + quote(dir / "cpu.json"));
  INFO(cpu.err);
  REQUIRE(cpu.code == 0);
  const nlohmann::json j = read_json(dir / "cpu.json");
  CHECK(j.at("model").at("kind") == "model");
  CHECK(j.at("model").at("description").get<std::string>().find("llama") != std::string::npos);
  const nlohmann::json& run = j.at("runs")[0];
  CHECK(run.at("retained_mass").is_null());

  attendre::Model model = attendre::Model::open(path).value_or_throw();
  const std::vector<uint32_t> ids = expected_ids(model.tokenizer(), template_parts(kQuestion, kStory));
  CHECK(j.at("document").at("tokens") == ids.size());
  const ReferenceRun expected = reference_run(model, ids, "lra_sum");
  REQUIRE(run.at("blocks").size() == expected.blocks.size());
  for (size_t b = 0; b < expected.blocks.size(); ++b) {
    INFO("block " << b);
    CHECK(held(run, b) == expected.blocks[b].positions);
    const auto scores = run.at("blocks")[b].at("scores").get<std::vector<double>>();
    REQUIRE(scores.size() == expected.blocks[b].scores.size());
    for (size_t i = 0; i < scores.size(); ++i)
      CHECK(std::abs(scores[i] - expected.blocks[b].scores[i]) <= 1e-12 * std::max(1.0, std::abs(scores[i])));
  }
  CHECK(j.at("answer") == expected.answer);
  CHECK(run.at("answer") == expected.answer);
  CHECK(cpu.out.find(expected.answer) != std::string::npos);

  // The GPU under fifo keeps the positions the reference keeps (fifo's
  // choices do not hang on scores), and two GPU runs agree but for timings.
  const std::string fifo = common + memory_flags("fifo");
  const ToolStreams g1 = run_reader(fifo + " --json " + quote(dir / "gpu1.json"));
  const ToolStreams g2 = run_reader(fifo + " --json " + quote(dir / "gpu2.json"));
  const ToolStreams c = run_reader(fifo + " --device cpu --json " + quote(dir / "cpu-fifo.json"));
  INFO(g1.err << c.err);
  REQUIRE(g1.code == 0);
  REQUIRE(g2.code == 0);
  REQUIRE(c.code == 0);
  const nlohmann::json gj = read_json(dir / "gpu1.json"), cj = read_json(dir / "cpu-fifo.json");
  CHECK(without_timings(gj).dump() == without_timings(read_json(dir / "gpu2.json")).dump());
  for (size_t b = 0; b < expected.blocks.size(); ++b) CHECK(held(gj.at("runs")[0], b) == held(cj.at("runs")[0], b));
  CHECK(gj.at("runs")[0].at("device_memory").at("total").get<uint64_t>() > 0);
  CHECK(gj.at("answer").is_string());
}

TEST_CASE("attendre-reader --model --lm-infinite: RoPE distances capped as the library caps them") {
  const auto models = shared_models();
  if (!models) return;
  const std::filesystem::path path = *models / "stories260K.gguf";
  const TempDir dir;
  const std::string text = write_text(dir, kStory);
  const ToolStreams r =
      run_reader("--model " + quote(path.string()) + " --text " + quote(text) + " --question " + quote(kQuestion) +
                 memory_flags("lra_sum") + " --lm-infinite 8 --device cpu --json " + quote(dir / "lm.json"));
  INFO(r.err);
  REQUIRE(r.code == 0);
  const nlohmann::json j = read_json(dir / "lm.json");
  for (const nlohmann::json& b : j.at("configuration").at("blocks")) CHECK(b.at("lm_infinite") == 8);
  CHECK(r.out.find("LM-Infinite n_local=8") != std::string::npos);

  attendre::Model model = attendre::Model::open(path).value_or_throw();
  const std::vector<uint32_t> ids = expected_ids(model.tokenizer(), template_parts(kQuestion, kStory));
  const ReferenceRun capped = reference_run(model, ids, "lra_sum", LmInfinite{true, 8});
  const ReferenceRun uncapped = reference_run(model, ids, "lra_sum");
  const nlohmann::json& run = j.at("runs")[0];
  bool differs = false;
  for (size_t b = 0; b < capped.blocks.size(); ++b) {
    CHECK(held(run, b) == capped.blocks[b].positions);
    CHECK(run.at("blocks")[b].at("scores").get<std::vector<double>>() == capped.blocks[b].scores);
    differs = differs || capped.blocks[b].scores != uncapped.blocks[b].scores;
  }
  CHECK(differs);  // the cap changes what the model attends to
  CHECK(j.at("answer") == capped.answer);
}

TEST_CASE("attendre-reader --model: a generated GGUF runs the full path on the GPU, deterministically") {
  const TempDir dir;
  const std::filesystem::path path = write_fixture(dir.path, FixtureShape::for_type("llama", gguf::TensorType::f32), 11);
  const std::string common = "--model " + quote(path.string()) + " --haystack-tokens 300 --depths 0.5 --seed 5" +
                             memory_flags("lra_sum");
  const ToolStreams a = run_reader(common + " --json " + quote(dir / "a.json"));
  const ToolStreams b = run_reader(common + " --json " + quote(dir / "b.json"));
  INFO(a.err);
  REQUIRE(a.code == 0);
  REQUIRE(b.code == 0);
  const nlohmann::json ja = read_json(dir / "a.json");
  CHECK(without_timings(ja).dump() == without_timings(read_json(dir / "b.json")).dump());
  CHECK(ja.at("model").at("kind") == "model");
  CHECK(ja.at("answer").is_string());
  CHECK(ja.at("runs")[0].at("blocks")[0].at("held").size() <= 64);
  // A different seed plants the needle elsewhere: the run is a function of it.
  const ToolStreams other = run_reader("--model " + quote(path.string()) + " --haystack-tokens 300 --depths 0.5 --seed 6" +
                                       memory_flags("lra_sum") + " --json " + quote(dir / "c.json"));
  REQUIRE(other.code == 0);
  CHECK(read_json(dir / "c.json").at("needles").dump() != ja.at("needles").dump());
}

#endif

TEST_CASE("attendre-reader --model --fp16-memory --fp16-activations: the stack rounds as the reference's, on both devices") {
  const auto models = shared_models();
  if (!models) return;
  const std::filesystem::path path = *models / "stories260K.gguf";
  const TempDir dir;
  const std::string text = write_text(dir, kStory);
  const std::string common = "--model " + quote(path.string()) + " --text " + quote(text) + " --question " +
                             quote(kQuestion) + " --fp16-memory --fp16-activations";
  const ToolStreams cpu =
      run_reader(common + memory_flags("lra_sum") + " --device cpu --json " + quote(dir / "cpu.json"));
  INFO(cpu.err);
  REQUIRE(cpu.code == 0);
  const nlohmann::json j = read_json(dir / "cpu.json");
  CHECK(j.at("configuration").at("activations") == "f16");
  for (const nlohmann::json& b : j.at("configuration").at("blocks")) CHECK(b.at("storage") == "f16");

  // The float64 reference under the same settings keeps the same entries
  // with the same scores; without the rounding, the scores move.
  attendre::Model model = attendre::Model::open(path).value_or_throw();
  const std::vector<uint32_t> ids = expected_ids(model.tokenizer(), template_parts(kQuestion, kStory));
  const ReferenceRun rounded = reference_run(model, ids, "lra_sum", {}, true);
  const ReferenceRun unrounded = reference_run(model, ids, "lra_sum");
  const nlohmann::json& run = j.at("runs")[0];
  bool moved = false;
  for (size_t b = 0; b < rounded.blocks.size(); ++b) {
    INFO("block " << b);
    CHECK(held(run, b) == rounded.blocks[b].positions);
    CHECK(run.at("blocks")[b].at("scores").get<std::vector<double>>() == rounded.blocks[b].scores);
    moved = moved || rounded.blocks[b].scores != unrounded.blocks[b].scores;
  }
  CHECK(moved);
  CHECK(j.at("answer") == rounded.answer);

  // The GPU under fifo (choices that do not hang on scores) keeps what the
  // reference keeps, with the same settings in its JSON.
  const ToolStreams gpu = run_reader(common + memory_flags("fifo") + " --json " + quote(dir / "gpu.json"));
  const ToolStreams fifo = run_reader(common + memory_flags("fifo") + " --device cpu --json " + quote(dir / "fifo.json"));
  INFO(gpu.err << fifo.err);
  REQUIRE(gpu.code == 0);
  REQUIRE(fifo.code == 0);
  const nlohmann::json gj = read_json(dir / "gpu.json"), fj = read_json(dir / "fifo.json");
  CHECK(gj.at("configuration") == fj.at("configuration"));
  for (size_t b = 0; b < rounded.blocks.size(); ++b) CHECK(held(gj.at("runs")[0], b) == held(fj.at("runs")[0], b));
}
