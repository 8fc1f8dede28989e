// The C API against the C++ API: tests/capi/capi_program.c (C11, only
// <attendre/attendre.h>) runs on a generated GGUF model (and stories260K
// when ../shared/models has it) and writes what it got; here the same ids
// go through the float64 reference stack under the same memory: the same
// tokens, retained positions, scores and last logits within tolerance, the
// same greedy tokens, and the same read-and-answer. Its error paths and the
// device-only checks (random stack, layer, K/V memory) fail the program
// itself.
#include "no_device/gguf_test_support.hpp"
#include "model_checks.hpp"
#include "model_fixtures.hpp"
#include "support.hpp"

#include <attendre/attendre.h>
#include <attendre/generate.hpp>
#include <attendre/model.hpp>
#include <attendre/reading.hpp>
#include <attendre/reference/stack.hpp>

#include <doctest/doctest.h>

#include <cmath>
#include <map>
#include <sstream>

#ifdef ATTENDRE_CAPI_PROGRAM

using namespace attendre;
using namespace attendre::test;

namespace {

const std::string kText = "Lily had a red ball. She played with it in the park every day.";

// "key rest of line" per line of the program's output.
std::map<std::string, std::string> parse(const std::string& text) {
  std::map<std::string, std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    const size_t space = line.find(' ');
    lines[line.substr(0, space)] = space == std::string::npos ? "" : line.substr(space + 1);
  }
  return lines;
}

template <class T>
std::vector<T> numbers(const std::string& text) {
  std::istringstream in(text);
  std::vector<T> values;
  for (T v; in >> v;) values.push_back(v);
  return values;
}

// Snapshot lines repeat their key with the block first: keyed by both.
std::map<std::string, std::string> parse_blocks(const std::string& text) {
  std::map<std::string, std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    std::istringstream words(line);
    std::string key, block;
    words >> key >> block;
    std::string rest;
    std::getline(words, rest);
    lines[key + " " + block] = rest;
  }
  return lines;
}

MemoryPlan program_memory(const std::string& policy) {
  MemoryPlan plan;
  plan.chunk = 8;
  plan.all.q_capacity = 4;
  plan.all.kv.capacity = 16;
  plan.all.top_k = 8;
  plan.all.kv.policy = Policy{*parse_policy(policy), 0.0, {}};
  return plan;
}

void check_close(const std::vector<double>& got, const std::vector<double>& expected, double tolerance,
                 const std::string& what) {
  INFO(what);
  REQUIRE(got.size() == expected.size());
  for (size_t i = 0; i < got.size(); ++i)
    CHECK(std::abs(got[i] - expected[i]) <= tolerance * (1.0 + std::abs(expected[i])));
}

// Runs the C program on `model_path` and checks it against the reference.
void check_program(const std::filesystem::path& model_path, const std::string& policy) {
  INFO(model_path.filename().string() << " under " << policy);
  TempDir dir;
  const std::string out_path = dir / "capi.txt";
  const ToolOutcome run = run_tool(ATTENDRE_CAPI_PROGRAM, out_path + " " + model_path.string() + " " + policy);
  INFO(run.output);
  REQUIRE(run.exit_code == 0);
  const std::string text = slurp(out_path);
  const auto lines = parse(text);
  const auto blocks = parse_blocks(text);

  Model model = Model::open(model_path).value_or_throw();
  const Tokenizer& tokenizer = model.tokenizer();
  const std::vector<uint32_t> ids = tokenizer.encode(kText).value_or_throw();
  CHECK(numbers<uint32_t>(lines.at("ids")) == ids);
  CHECK(lines.at("decoded") == tokenizer.decode(ids).value_or_throw());
  CHECK(lines.at("architecture") == model.info().architecture);

  // The same ids, chunks, drain and generation on the float64 reference.
  const StackConfig config = model.stack_config(program_memory(policy)).value_or_throw();
  reference::Stack stack(config, model.weights());
  const int64_t n = static_cast<int64_t>(ids.size());
  const std::vector<float> last_logits = test::read_and_finish(stack, ids);  // S = 8 as the program's
  check_close(numbers<double>(lines.at("last_logits")), std::vector<double>(last_logits.begin(), last_logits.end()),
              2e-3, "last logits");
  for (size_t b = 0; b < config.blocks.size(); ++b) {
    const MemorySnapshot held = stack.snapshot(b).value_or_throw();
    CHECK(numbers<int64_t>(blocks.at("stack_positions " + std::to_string(b))) == held.positions);
    check_close(numbers<double>(blocks.at("stack_scores " + std::to_string(b))), held.scores, 1e-3,
                "scores of block " + std::to_string(b));
  }
  GenerateOptions options;
  options.max_tokens = 8;
  options.stop_tokens = tokenizer.stop_tokens();
  const GenerateResult generated = generate_after(stack, last_logits, n, options).value_or_throw();
  CHECK(numbers<uint32_t>(lines.at("generated")) == generated.tokens);
  CHECK(lines.at("stopped") == (generated.stopped ? "1" : "0"));

  // Reading a document: the library's read on the reference.
  reference::Stack reader(config, model.weights());
  ReadOptions read;
  read.answer_tokens = 6;
  const ReadResult expected = read_document(reader, tokenizer, "What color was the ball?", kText, read).value_or_throw();
  CHECK(lines.at("answer") == expected.answer.text);
  CHECK(lines.at("document_tokens") == std::to_string(expected.document_tokens));
  for (size_t b = 0; b < config.blocks.size(); ++b)
    CHECK(numbers<int64_t>(blocks.at("read_positions " + std::to_string(b))) == reader.snapshot(b).value_or_throw().positions);
}

// The Android app's JNI binding (tests/jni/JniTest.java on a desktop JVM,
// through apps/android's AttendreNative.java and attendre_jni.c): its error
// paths fail the Java program itself; its read of the C program's question
// and text under the same memory gives the same answer, document length and
// retained positions as the C program's attendre_read_document.
void check_jni(const std::filesystem::path& model_path, const std::string& policy) {
#ifdef ATTENDRE_JNI_JAVA
  INFO(model_path.filename().string() << " under " << policy);
  TempDir dir;
  const std::string c_path = dir / "capi.txt", java_path = dir / "jni.txt";
  const ToolOutcome c_run = run_tool(ATTENDRE_CAPI_PROGRAM, c_path + " " + model_path.string() + " " + policy);
  INFO(c_run.output);
  REQUIRE(c_run.exit_code == 0);
  const ToolOutcome java_run =
      run_tool(ATTENDRE_JNI_JAVA, std::string("-Djava.library.path=") + ATTENDRE_JNI_LIBRARY_DIR + " -cp " +
                                      ATTENDRE_JNI_JAR + " JniTest " + java_path + " " + model_path.string() + " " +
                                      policy);
  INFO(java_run.output);
  REQUIRE(java_run.exit_code == 0);
  CHECK(java_run.output.find("jni: ok") != std::string::npos);
  const auto c_lines = parse(slurp(c_path)), java_lines = parse(slurp(java_path));
  for (const char* key : {"device", "architecture", "answer", "document_tokens"}) {
    INFO(key);
    CHECK(java_lines.at(key) == c_lines.at(key));
  }
  const auto c_blocks = parse_blocks(slurp(c_path)), java_blocks = parse_blocks(slurp(java_path));
  size_t blocks = 0;
  for (const auto& [key, positions] : java_blocks) {
    if (key.rfind("read_positions ", 0) != 0) continue;
    INFO(key);
    CHECK(positions == c_blocks.at(key));
    ++blocks;
  }
  CHECK(blocks == Model::open(model_path).value_or_throw().info().blocks);
#else
  (void)model_path;
  (void)policy;
  MESSAGE("skipped: no JDK (javac, jni.h) was found when configuring; Debian: default-jdk-headless");
#endif
}

}  // namespace

TEST_CASE("C API: the Android app's JNI binding reads a document as the C program does") {
  TempDir dir;
  check_jni(write_fixture(dir.path, FixtureShape{}, 11), "lra_sum");
  if (const auto models = shared_models()) check_jni(*models / "stories260K.gguf", "fifo");
}

TEST_CASE("C API: a C11 program equals the C++ API on a generated llama model") {
  TempDir dir;
  const std::filesystem::path path = write_fixture(dir.path, FixtureShape{}, 11);
  for (const std::string policy : {"fifo", "lra_sum"}) check_program(path, policy);
}

TEST_CASE("C API: a C11 program equals the C++ API on stories260K") {
  const auto models = shared_models();
  if (!models) return;
  check_program(*models / "stories260K.gguf", "lru");
}

TEST_CASE("C API: read_document gives the ids the reader's per-part encoding gives") {
  // The document the library reads is the template's parts encoded one by
  // one with their trailing spaces carried (as the reader tool does, whose
  // tests check the parts' ids); here: the same positions, whatever the
  // chunking, and an answer of one line.
  TempDir dir;
  Model model = Model::open(write_fixture(dir.path, FixtureShape{}, 5)).value_or_throw();
  StackConfig config = model.stack_config(program_memory("fifo")).value_or_throw();
  reference::Stack a(config, model.weights());
  const ReadResult first = read_document(a, model.tokenizer(), "Why?  ", "Because.  ", {}).value_or_throw();
  config.chunk = 3;
  for (BlockConfig& b : config.blocks) b.attention.chunk = 3;
  reference::Stack b(config, model.weights());
  const ReadResult second = read_document(b, model.tokenizer(), "Why?  ", "Because.  ", {}).value_or_throw();
  CHECK(first.document_tokens == second.document_tokens);
  CHECK(first.answer.text.find('\n') == std::string::npos);
  CHECK(answer_line("  \n hello world  \r\nmore") == "hello world");
  CHECK(answer_line("ok \xe4\xb8") == "ok");
  CHECK_THROWS_WITH_AS(read_document(b, model.tokenizer(), "\xff", "x", {}).value_or_throw(), doctest::Contains("UTF-8"), Error);
}

#endif

// Outside the program's checks: the C API copies a message into a C string,
// where a NUL from the file would cut it; escaped, it holds none.
TEST_CASE("C API: attendre_last_error shows a message quoting a file's string with a NUL whole") {
  attendre::test::TempDir dir;
  const std::string architecture("lla\0ma\xFF", 7);
  const std::vector<std::string> tokens = {"<unk>", "<s>", "</s>"};
  using attendre::gguf::MetadataValue;
  attendre::gguf::Writer writer = attendre::gguf::Writer::create().value_or_throw();
  writer.add("general.architecture", MetadataValue::string(architecture)).or_throw();
  writer.add("tokenizer.ggml.model", MetadataValue::string("llama")).or_throw();
  writer.add("tokenizer.ggml.tokens", MetadataValue::strings(tokens)).or_throw();
  const std::string path = (dir.path / "nul.gguf").string();
  writer.write(path).or_throw();
  attendre_model* model = nullptr;
  CHECK(attendre_model_open(path.c_str(), nullptr, &model) == ATTENDRE_ERROR_UNSUPPORTED);
  CHECK(model == nullptr);
  CHECK(std::string(attendre_last_error()) ==
        path + ": metadata key \"general.architecture\": architecture 'lla\\x00ma\\xFF' is not supported (supported: "
               "llama, qwen2, qwen3, phi3, gemma2, gemma3, t5, t5encoder)");
}
