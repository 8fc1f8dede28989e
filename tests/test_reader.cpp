// attendre-reader run as a user would, on generated haystacks and a text
// file: the comparison table and its JSON, the point of the demo (a memory
// that keeps the question keeps the facts it asks for; a recent window
// keeps none), determinism, the template, progress, and --help.
#include "reader_support.hpp"

#ifdef ATTENDRE_READER_BINARY

#include <fstream>
#include <sstream>

using namespace attendre::test;
using namespace attendre::test::reader;

TEST_CASE("attendre-reader: a haystack under several policies, one table, and the needles where they belong") {
  const TempDir dir;
  const ToolStreams r = run_reader(kHaystack + " --compare fifo,sinks,lru,lra_sum --json " + quote(dir / "r.json"));
  INFO(r.out << r.err);
  REQUIRE(r.code == 0);
  const nlohmann::json j = read_json(dir / "r.json");
  CHECK(j.at("schema") == "attendre-reader/1");
  CHECK(j.at("model").at("kind") == "lexical");
  REQUIRE(j.at("needles").size() == 3);
  REQUIRE(j.at("runs").size() == 4);
  const auto question = j.at("document").at("question_positions").get<std::vector<int64_t>>();
  const int64_t tokens = j.at("document").at("tokens");
  CHECK(tokens >= 1200);

  // The table: one row per policy, its verdicts those of the JSON.
  std::map<std::string, std::string> rows;
  std::istringstream lines(r.out);
  for (std::string line; std::getline(lines, line);)
    for (const auto& run : j.at("runs"))
      if (line.starts_with(run.at("policy").get<std::string>() + " ")) rows.emplace(run.at("policy"), line);  // the first: the table's
  REQUIRE(rows.size() == 4);
  for (const auto& run : j.at("runs")) {
    const std::string policy = run.at("policy");
    INFO(policy << ": " << rows[policy]);
    std::istringstream row(rows[policy]);
    std::string name, verdict;
    row >> name;
    for (size_t n = 0; n < 3; ++n) {
      row >> verdict;
      CHECK(verdict == (run.at("needles").at(n).at("retained").get<bool>() ? "kept" : "lost"));
      CHECK(run.at("needles").at(n).at("retained") == needle_held(run, n, 2));
    }
    CHECK(run.at("retained_mass").at("value").get<double>() > 0.0);
    CHECK(run.at("retained_mass").at("value").get<double>() <= 1.0);
    CHECK(run.at("tokens_per_second").get<double>() > 0.0);
    CHECK(run.at("device_memory").at("total").get<uint64_t>() > 0);
    for (const auto& block : run.at("blocks")) CHECK(block.at("held").size() == 192);  // full after 1,200 tokens
    CHECK(run.at("passages").size() >= 1);
    CHECK(run.at("answer").is_null());  // the lexical model does not generate
  }

  // The demo's point. fifo keeps the last 192 positions: no needle, no question.
  const auto& runs = j.at("runs");
  const auto by_policy = [&](const std::string& p) -> const nlohmann::json& {
    for (const auto& run : runs)
      if (run.at("policy") == p) return run;
    FAIL("no run " << p);
    return runs[0];
  };
  const std::vector<int64_t> fifo = held(by_policy("fifo"), 2);
  CHECK(fifo.front() == tokens - 192);
  CHECK(by_policy("fifo").at("needles_retained") == 0);
  // sinks adds the first four positions ("Question: What is") and nothing the question asks for.
  const std::vector<int64_t> sinks = held(by_policy("sinks"), 2);
  CHECK(std::vector<int64_t>(sinks.begin(), sinks.begin() + 4) == std::vector<int64_t>{0, 1, 2, 3});
  CHECK(by_policy("sinks").at("needles_retained") == 0);
  // lra_sum keeps the question and every fact, whole, in every block it needs.
  const nlohmann::json& lra = by_policy("lra_sum");
  CHECK(lra.at("needles_retained") == 3);
  const std::vector<int64_t> kept = held(lra, 2);
  for (int64_t p = question[0]; p <= question[1]; ++p) CHECK(std::binary_search(kept.begin(), kept.end(), p));
  for (const auto& needle : j.at("needles")) {
    const auto span = needle.at("positions").get<std::vector<int64_t>>();
    for (int64_t p = span[0]; p <= span[1]; ++p) CHECK(std::binary_search(kept.begin(), kept.end(), p));
  }
  // And carries more of full attention's mass than a window does.
  CHECK(lra.at("retained_mass").at("value").get<double>() > by_policy("fifo").at("retained_mass").at("value").get<double>() + 0.1);
}

TEST_CASE("attendre-reader: a fixed seed gives the same read, another seed another haystack") {
  const TempDir dir;
  const std::string args = "--haystack-tokens 400 --needles 2 --kv-capacity 96 --policy lra_max --quiet --json ";
  REQUIRE(run_reader("--seed 3 " + args + quote(dir / "a.json")).code == 0);
  REQUIRE(run_reader("--seed 3 " + args + quote(dir / "b.json")).code == 0);
  REQUIRE(run_reader("--seed 4 " + args + quote(dir / "c.json")).code == 0);
  nlohmann::json a = read_json(dir / "a.json"), b = read_json(dir / "b.json"), c = read_json(dir / "c.json");
  for (nlohmann::json* j : {&a, &b, &c})
    for (auto& run : j->at("runs")) run.erase("seconds"), run.erase("tokens_per_second");
  CHECK(a == b);
  CHECK(a.at("document").at("question") != c.at("document").at("question"));
}

TEST_CASE("attendre-reader: the template and the question are the user's") {
  const TempDir dir;
  const ToolStreams r = run_reader(
      "--haystack-tokens 300 --needles 1 --kv-capacity 96 --policy fifo --quiet --json " + quote(dir / "r.json") +
      " --question 'Where is the harbour?' --template 'Context: {context}\\n\\nQuestion: {question}\\n\\nAnswer:'");
  INFO(r.out << r.err);
  REQUIRE(r.code == 0);
  const nlohmann::json j = read_json(dir / "r.json");
  CHECK(j.at("document").at("question") == "Where is the harbour?");
  CHECK(j.at("document").at("template") == "Context: {context}\\n\\nQuestion: {question}\\n\\nAnswer:");
  // The question now comes after the context: fifo's window holds it.
  const auto question = j.at("document").at("question_positions").get<std::vector<int64_t>>();
  const auto context = j.at("document").at("context_positions").get<std::vector<int64_t>>();
  CHECK(question[0] > context[1]);
  CHECK(question[1] - question[0] == 4);  // Where is the harbour ?
  const std::vector<int64_t> kept = held(j.at("runs")[0], 2);
  CHECK(std::binary_search(kept.begin(), kept.end(), question[0]));
}

TEST_CASE("attendre-reader: a text file streams in blocks, progress goes to stderr as plain lines, --quiet silences it") {
  const TempDir dir;
  // Past the 64 KiB read block, with a two-byte character across its end:
  // long words keep the token count, and the test, small.
  std::string text = "Question words and a fact: the silver kettle holds 7.\n\n";  // 12 tokens
  const std::string word(499, 'w');
  int64_t words = 0;
  for (; text.size() + word.size() + 1 < 65535; ++words) text += word + " ";
  text.resize(65535, ' ');
  text += "\xc3\xa9t\xc3\xa9 end of the text.\n";  // "été": its first byte ends the first block; 6 tokens
  std::ofstream(dir / "long.txt", std::ios::binary) << text;

  const std::string args = "--text " + quote(dir / "long.txt") + " --policy lra_sum --kv-capacity 64 --chunk 16 --json " +
                           quote(dir / "r.json") + " --report " + quote(dir / "r.html");
  const ToolStreams loud = run_reader(args);
  INFO(loud.out << loud.err);
  REQUIRE(loud.code == 0);
  CHECK(loud.err.find("[1/1 lra_sum]") != std::string::npos);
  CHECK(loud.err.find("tokens/s") != std::string::npos);
  CHECK(loud.err.find('\r') == std::string::npos);  // not a terminal: plain lines
  const nlohmann::json j = read_json(dir / "r.json");
  CHECK(j.at("document").at("source") == "text");
  CHECK(j.at("document").at("question") == "What is this text about?");
  CHECK(j.at("needles").empty());
  // The template's 6 tokens, the question's 6, the text's 12 + words + 6.
  CHECK(j.at("document").at("tokens") == 6 + 6 + 12 + words + 6);
  // Short enough to be shown whole, the character across the blocks intact.
  CHECK(slurp(dir / "r.html").find("\xc3\xa9t\xc3\xa9") != std::string::npos);

  const ToolStreams quiet = run_reader(args + " --quiet");
  REQUIRE(quiet.code == 0);
  CHECK(quiet.err.empty());
}

TEST_CASE("attendre-reader: --help documents every option") {
  const ToolStreams r = run_reader("--help");
  REQUIRE(r.code == 0);
  for (const char* flag : {"--text", "--haystack", "--haystack-tokens", "--needles", "--depths", "--seed", "--question",
                           "--template", "--model", "--chunk", "--q-capacity", "--kv-capacity", "--top-k", "--sinks",
                           "--policy", "--compare", "--lambda", "--init-k", "--init-const", "--flush", "--fp16", "--fp16-memory", "--fp16-activations",
                           "--device", "--json", "--report", "--export-stream", "--quiet", "--answer-tokens", "--lm-infinite"})
    CHECK_MESSAGE(r.out.find(flag) != std::string::npos, flag);
}

#endif
