// The recent window and the memory aliases through the tools' command lines:
// attendre-generate's and attendre-perplexity's --recent, --layer
// BLOCKS:recent=W, --policy / --compare h2o, streamingllm and tova (the
// memory JSON shows what reached the stack), their refusals, and the
// reader's --recent and h2o.
#include "no_device/gguf_test_support.hpp"
#include "reader_support.hpp"
#include "support.hpp"

#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include <fstream>

using namespace attendre;
namespace fs = std::filesystem;

namespace {

std::string quoted(const std::string& s) { return "'" + s + "'"; }

nlohmann::json read_json(const fs::path& path) {
  std::ifstream in(path);
  REQUIRE(in);
  return nlohmann::json::parse(in);
}

}  // namespace

#if defined(ATTENDRE_GENERATE_BINARY) && defined(ATTENDRE_PERPLEXITY_BINARY)

TEST_CASE("memory tools: --recent, recent= overrides and the h2o, streamingllm and tova aliases reach the stack") {
  const auto models = test::shared_models();
  if (!models) return;
  test::TempDir dir;
  const std::string model = "--model " + quoted(*models / "stories260K.gguf");
  const auto generate = [&](const std::string& args) {
    return test::run_tool_streams(ATTENDRE_GENERATE_BINARY, model + " --prompt 'Once upon a time' --max-tokens 6 " + args);
  };
  test::ToolStreams r = generate("--chunk 4 --kv-capacity 16 --top-k 8 --policy h2o --sinks 2 --layer 1:recent=3 "
                                 "--json " + quoted(dir / "h.json"));
  INFO(r.err);
  REQUIRE(r.code == 0);
  const nlohmann::json h2o = read_json(dir / "h.json")["memory"]["blocks"];
  CHECK(h2o[0]["policy"] == "lfa");
  CHECK(h2o[0]["lambda"] == 0.0);
  CHECK(h2o[0]["sinks"] == 2);
  CHECK(h2o[0]["recent"] == 7);  // (M - sinks) / 2
  CHECK(h2o[1]["recent"] == 3);
  r = generate("--chunk 4 --kv-capacity 16 --policy lru --recent 5 --json " + quoted(dir / "r.json"));
  REQUIRE(r.code == 0);
  for (const auto& block : read_json(dir / "r.json")["memory"]["blocks"]) {
    CHECK(block["recent"] == 5);
    CHECK(block["policy"] == "lru");
  }

  // A window the memory cannot hold names the flags; --full-context fixes it.
  r = generate("--chunk 4 --kv-capacity 16 --recent 15 --sinks 2 --json " + quoted(dir / "bad.json"));
  CHECK(r.code == 1);
  CHECK(r.err.find("W is --recent") != std::string::npos);
  CHECK_FALSE(fs::exists(dir / "bad.json"));
  r = generate("--full-context --recent 4");
  CHECK(r.code == 2);
  CHECK(r.err.find("drop --recent") != std::string::npos);
  r = generate("--policy h2o --lambda 0.1");
  CHECK(r.code == 2);
  CHECK(r.err.find("--lambda only applies to --policy lfa, not h2o") != std::string::npos);
  r = generate("--policy lifo");
  CHECK(r.code == 2);
  CHECK(r.err.find("--policy: expected one of fifo, lru, lfu, lra_last, lra_max, lra_sum, lfa, got 'lifo' (or an alias: "
                   "sinks, streamingllm, tova, h2o)") != std::string::npos);

  std::ofstream(dir / "story.txt") << "Once upon a time, there was a little girl named Lily. She loved to play "
                                      "outside in the park. One day, she saw a big, red ball.";
  r = test::run_tool_streams(ATTENDRE_PERPLEXITY_BINARY,
                             model + " --file " + quoted(dir / "story.txt") +
                                 " --compare streamingllm,tova,h2o --chunk 8 --kv-capacity 24 --json " + quoted(dir / "p.json"));
  REQUIRE(r.code == 0);
  const nlohmann::json results = read_json(dir / "p.json")["results"];
  REQUIRE(results.size() == 3);
  CHECK(results[0]["memory"]["blocks"][0]["policy"] == "fifo");
  CHECK(results[0]["memory"]["blocks"][0]["sinks"] == 4);
  CHECK(results[1]["memory"]["blocks"][0]["policy"] == "lra_last");
  CHECK(results[2]["memory"]["blocks"][0]["policy"] == "lfa");
  CHECK(results[2]["memory"]["blocks"][0]["recent"] == 12);
  CHECK(results[0]["memory"]["blocks"][0]["recent"] == 0);
}

#endif

#ifdef ATTENDRE_READER_BINARY

TEST_CASE("memory tools: the reader's --recent and h2o reach its stacks, its preset is printed") {
  test::TempDir dir;
  const test::ToolStreams r = test::reader::run_reader(test::reader::kHaystack + " --compare fifo,h2o,tova --recent 0,24,0 --json " +
                                               quoted(dir / "r.json"));
  INFO(r.err);
  REQUIRE(r.code == 0);
  const nlohmann::json runs = read_json(dir / "r.json")["runs"];
  REQUIRE(runs.size() == 3);
  CHECK(runs[0]["recent"] == std::vector<uint32_t>{0, 24, 0});
  CHECK(runs[1]["recent"] == std::vector<uint32_t>{96, 24, 96});  // (192 - 0) / 2 where --recent gives none
  CHECK(runs[2]["policies"][0] == "tova");

  // The defaults are the library's "reader" preset, printed and named in the JSON.
  CHECK(r.out.find("\npreset    reader (S=32 N=32 M=256 K=32 lambda=0.001, lambda for lfa; the memory flags change it)\n") !=
        std::string::npos);
  const nlohmann::json configuration = read_json(dir / "r.json")["configuration"];
  CHECK(configuration["preset"] == "reader");
  CHECK(configuration["chunk"] == 32);
  for (const auto& block : configuration["blocks"]) {
    CHECK(block["kv_capacity"] == 192);  // the schema's names and the library's memory form agree
    CHECK(block["M"] == 192);
    CHECK(block["q_capacity"] == 32);
    CHECK(block["N"] == 32);
    CHECK(block["top_k"] == 32);
  }
}

#endif
