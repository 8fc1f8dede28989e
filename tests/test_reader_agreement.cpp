// The reader's retention table agrees with the two references for the same
// streams: the float64 reference stack (attendre-reader --device cpu) and
// the replay tool on block 0's recorded stream (spec section 6,
// attendre-replay --device cpu). Block 0's queries and keys are small
// integers (the lexical model's design), so its decisions have no fp32
// near-ties and the GPU must match both exactly; deeper blocks see
// attention outputs, where fp32 and float64 may break a near-tie apart, so
// there the needles' fate must agree and the sets nearly so.
#include "reader_support.hpp"

#if defined(ATTENDRE_READER_BINARY) && defined(ATTENDRE_REPLAY_BINARY)

#include "npy/npy.hpp"

#include <cmath>

using namespace attendre;
using namespace attendre::test;
using namespace attendre::test::reader;

namespace {

// The replay tool's flags for the reader's memory under `policy` (reader
// defaults: S = 32, N = 32, K = 32, lambda 0.001).
std::string replay_flags(const std::string& policy) {
  std::string flags = " --chunk 32 --q-capacity 32 --kv-capacity 192 --top-k 32 --policy " + policy;
  if (policy == "lfa") flags += " --lambda 0.001";
  return flags;
}

}  // namespace

TEST_CASE("attendre-reader: retention agrees with the reference stack and with attendre-replay on block 0's stream") {
  for (const std::string policy : {"fifo", "lra_sum", "lfa", "lru"}) {
    INFO("policy " << policy);
    const TempDir dir;
    const std::string common = kHaystack + " --policy " + policy;
    const ToolStreams gpu = run_reader(common + " --json " + quote(dir / "gpu.json") + " --export-stream " + quote(dir / "stream"));
    INFO(gpu.err);
    REQUIRE(gpu.code == 0);
    const ToolStreams cpu = run_reader(common + " --device cpu --json " + quote(dir / "cpu.json"));
    INFO(cpu.err);
    REQUIRE(cpu.code == 0);
    const std::string stream = dir / "stream";
    const ToolStreams replay = run_tool_streams(
        ATTENDRE_REPLAY_BINARY, "--q " + quote(stream + "/q.npy") + " --k " + quote(stream + "/k.npy") + " --v " +
                                    quote(stream + "/v.npy") + replay_flags(policy) + " --device cpu --out " +
                                    quote(dir / "replay"));
    INFO(replay.err);
    REQUIRE(replay.code == 0);

    const nlohmann::json g = read_json(dir / "gpu.json").at("runs")[0], c = read_json(dir / "cpu.json").at("runs")[0];
    CHECK(c.at("device_memory").is_null());

    // Block 0: the same positions in all three, scores within fp32's reach.
    const npy::Array retained = npy::read(dir / "replay/retained.npy"), scores = npy::read(dir / "replay/scores.npy");
    const int64_t M = retained.shape[1], last_row = retained.shape[0] - 1;
    std::vector<int64_t> replayed;
    std::vector<double> replayed_scores;
    for (int64_t i = 0; i < M; ++i) {
      const int64_t p = retained.as<int64_t>()[last_row * M + i];
      if (p < 0) continue;
      replayed.push_back(p);
      replayed_scores.push_back(scores.as<double>()[last_row * M + i]);
    }
    CHECK(held(g, 0) == replayed);
    CHECK(held(c, 0) == replayed);
    const auto gpu_scores = g.at("blocks")[0].at("scores").get<std::vector<double>>();
    REQUIRE(gpu_scores.size() == replayed_scores.size());
    for (size_t i = 0; i < gpu_scores.size(); ++i)
      CHECK(std::abs(gpu_scores[i] - replayed_scores[i]) <= 1e-4 * std::max(1.0, std::abs(replayed_scores[i])));

    // Deeper blocks: every needle kept or lost alike, and nearly the same sets.
    for (size_t block = 1; block < 3; ++block) {
      INFO("block " << block);
      for (size_t n = 0; n < 3; ++n) CHECK(needle_held(g, n, block) == needle_held(c, n, block));
      CHECK(overlap(held(g, block), held(c, block)) >= 0.9);
    }
    CHECK(g.at("needles_retained") == c.at("needles_retained"));
  }
}

#endif
