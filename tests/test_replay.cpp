// attendre-replay run as a user would (spec section 6): its files against
// the reference layer driven directly, the spec's attention invariants
// through the command line, and --help. Its refusals and output sets:
// test_replay_errors.cpp.
#include "replay_support.hpp"

#ifdef ATTENDRE_REPLAY_BINARY

#include "npy/npy.hpp"
#include <attendre/reference/layer.hpp>

#include <doctest/doctest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <map>
#include <sstream>
#include <string>
#include <vector>

using namespace attendre;
namespace fs = std::filesystem;
using namespace attendre::test::replay;
using attendre::test::TempDir;
using attendre::test::slurp;

namespace {

// What the files must hold, built from the reference layer's step records.
struct Expected {
  std::vector<float> outputs;
  std::vector<int64_t> retained;
  std::vector<double> scores;
  size_t steps = 0;
};

Expected expected_files(const test::Stream& s, const std::vector<test::StepRecord>& records, uint32_t M) {
  const size_t q_row = s.shape.q_row();
  Expected e;
  e.steps = records.size();
  e.outputs.assign(s.rows * q_row, std::numeric_limits<float>::quiet_NaN());
  e.retained.assign(e.steps * M, -1);
  e.scores.assign(e.steps * M, std::numeric_limits<double>::quiet_NaN());
  for (size_t t = 0; t < records.size(); ++t) {
    const test::StepRecord& rec = records[t];
    for (size_t i = 0; i < rec.emitted.size(); ++i)
      for (size_t row = 0; row < s.rows; ++row)
        if (s.valid[row] && s.positions[row] == rec.emitted[i])
          std::copy_n(rec.outputs.begin() + static_cast<std::ptrdiff_t>(i * q_row), q_row,
                      e.outputs.begin() + static_cast<std::ptrdiff_t>(row * q_row));
    for (size_t j = 0; j < rec.snapshot.positions.size(); ++j) {
      e.retained[t * M + j] = rec.snapshot.positions[j];
      e.scores[t * M + j] = rec.snapshot.scores[j];
    }
  }
  return e;
}

// Exact when tolerance is 0; NaN must match NaN.
template <class T>
void check_close(std::span<const T> expected, std::span<const T> actual, double tolerance, const char* what) {
  REQUIRE(expected.size() == actual.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    const double e = expected[i], a = actual[i];
    if (std::isnan(e) || std::isnan(a)) {
      if (std::isnan(e) != std::isnan(a)) FAIL(what << "[" << i << "]: expected " << e << ", got " << a);
    } else if (std::abs(e - a) > tolerance * std::max(1.0, std::abs(e))) {
      FAIL(what << "[" << i << "]: expected " << e << ", got " << a);
    }
  }
}

void check_files(const Expected& e, const Files& f, const test::Stream& s, uint32_t M, double tolerance) {
  CHECK(f.outputs.shape == std::vector<int64_t>{s.rows, s.shape.heads_q, s.shape.head_dim});
  CHECK(f.retained.shape == std::vector<int64_t>{static_cast<int64_t>(e.steps), M});
  CHECK(f.scores.shape == f.retained.shape);
  CHECK(std::vector<int64_t>(f.retained.as<int64_t>().begin(), f.retained.as<int64_t>().end()) == e.retained);
  check_close<float>(e.outputs, f.outputs.as<float>(), tolerance, "outputs");
  check_close<double>(e.scores, f.scores.as<double>(), tolerance, "scores");
}

// The first stream for `config` whose reference decisions are all resolvable
// in fp32 (see test_layer_gpu.cpp), with the reference run's records.
test::Stream resolvable_stream(const LayerConfig& config, uint32_t rows, const test::StreamOptions& options,
                               std::vector<test::StepRecord>& records) {
  for (uint64_t seed = 1;; ++seed) {
    test::Stream s = test::random_stream(config.shape, rows, seed, options);
    reference::Layer layer(config);
    records = test::run_stream(layer, s);
    if (layer.kv_memory().min_decision_gap() >= 2e-5 || seed == 8) return s;
  }
}

}  // namespace

TEST_CASE("replay: files equal the reference layer on cpu and match it on gpu") {
  LayerConfig c;
  c.shape = {4, 2, 8};
  c.chunk = 5;
  c.q_capacity = 7;
  c.kv.capacity = 12;
  c.kv.policy = Policy::lra_sum(InitialScore::mean_minus_sigma(1.5));
  c.kv.n_sink = 1;
  c.retrieval.top_k = 4;
  const uint32_t T = 37;
  test::StreamOptions options;
  options.invalid_fraction = 0.25;
  options.first_position = 3;
  options.max_position_gap = 3;
  std::vector<test::StepRecord> records;
  const test::Stream s = resolvable_stream(c, T, options, records);
  const Expected e = expected_files(s, records, c.kv.capacity);

  // Steps: ceil(T/S) chunks, then drains until the last valid row has had
  // N rows inserted after it (every step inserts S rows, padding included).
  uint32_t last_valid = 0;
  for (uint32_t r = 0; r < T; ++r)
    if (s.valid[r]) last_valid = r;
  const size_t chunks = (T + c.chunk - 1) / c.chunk;
  const size_t needed = (last_valid + c.q_capacity + 1 + c.chunk - 1) / c.chunk;
  CHECK(e.steps == std::max(chunks, needed));
  CHECK(e.steps > chunks);  // this stream does drain

  TempDir dir;
  const std::string args = write_stream(dir, s) + layer_args(c);
  const Outcome cpu = replay(args + " --device cpu --out " + quote(dir / "cpu"));
  INFO(cpu.err);
  REQUIRE(cpu.code == 0);
  CHECK(cpu.err.empty());
  CHECK(cpu.out.rfind("replayed T=37 rows in " + std::to_string(e.steps) + " steps", 0) == 0);
  CHECK(std::count(cpu.out.begin(), cpu.out.end(), '\n') == 1);
  const Files cpu_files = read_outputs(dir / "cpu");
  check_files(e, cpu_files, s, c.kv.capacity, 0.0);

  const Outcome gpu = replay(args + " --device gpu --out " + quote(dir / "gpu"));
  INFO(gpu.err);
  REQUIRE(gpu.code == 0);
  CHECK(gpu.err.empty());
  check_files(e, read_outputs(dir / "gpu"), s, c.kv.capacity, 2e-4);
}

TEST_CASE("replay: --recent keeps the reference's retained sets on cpu and gpu, with sinks and without protect_new") {
  for (const PolicyKind kind : {PolicyKind::lfa, PolicyKind::lra_last, PolicyKind::lfu}) {
    LayerConfig c;
    c.shape = {2, 1, 8};
    c.chunk = 4;
    c.q_capacity = 3;
    c.kv.capacity = 11;
    c.kv.policy = Policy{kind, 0.0, {}};
    c.kv.n_sink = 2;
    c.kv.n_recent = 6;
    c.kv.protect_new = kind != PolicyKind::lra_last;
    c.retrieval.top_k = 3;
    INFO(to_string(kind));
    test::StreamOptions options;
    options.invalid_fraction = 0.2;
    std::vector<test::StepRecord> records;
    const test::Stream s = resolvable_stream(c, 33, options, records);
    const Expected e = expected_files(s, records, c.kv.capacity);
    TempDir dir;
    const std::string args = write_stream(dir, s) + layer_args(c);
    REQUIRE(args.find(" --recent 6") != std::string::npos);
    for (const char* device : {"cpu", "gpu"}) {
      const std::string out = dir / device;
      const Outcome o = replay(args + " --device " + device + " --out " + quote(out));
      INFO(device << ": " << o.err);
      REQUIRE(o.code == 0);
      check_files(e, read_outputs(out), s, c.kv.capacity, device == std::string("cpu") ? 0.0 : 2e-4);
    }
    // Without the window the files differ: the option reached the layer.
    const Outcome plain = replay(write_stream(dir, s) + layer_args([&] {
                                   LayerConfig w = c;
                                   w.kv.n_recent = 0;
                                   return w;
                                 }()) + " --out " + quote(dir / "plain"));
    REQUIRE(plain.code == 0);
    const Files with = read_outputs(dir / "cpu"), without = read_outputs(dir / "plain");
    const auto a = with.retained.as<int64_t>(), b = without.retained.as<int64_t>();
    CHECK_FALSE(std::equal(a.begin(), a.end(), b.begin(), b.end()));
  }
}

TEST_CASE("replay: tags, alibi, shared retrieval and lfa options reach the layer") {
  LayerConfig c;
  c.shape = {2, 1, 4};
  c.chunk = 3;
  c.q_capacity = 2;
  c.kv.capacity = 6;
  c.kv.policy = Policy::lfa(0.01, InitialScore::mean_minus_sigma(0.5));
  c.kv.protect_new = false;
  c.retrieval.top_k = 3;
  c.retrieval.mode = RetrievalMode::shared;
  c.retrieval.bias = BiasKind::alibi;
  c.retrieval.tag_mask = true;
  test::StreamOptions options;
  options.tag_values = 2;
  const test::Stream s = test::random_stream(c.shape, 20, 11, options);
  reference::Layer layer(c);
  const Expected e = expected_files(s, test::run_stream(layer, s), c.kv.capacity);

  TempDir dir;
  // int64 tags: the dtype numpy gives a plain integer array.
  const std::vector<int64_t> tags(s.tags.begin(), s.tags.end());
  const int64_t tag_shape[] = {s.rows};
  npy::write<int64_t>(dir / "tags.npy", tag_shape, tags);
  const Outcome o = replay(write_stream(dir, s, false) + layer_args(c) + " --tags " +
                                    quote(dir / "tags.npy") + " --out " + quote(dir / "out"));
  INFO(o.err);
  REQUIRE(o.code == 0);
  check_files(e, read_outputs(dir / "out"), s, c.kv.capacity, 0.0);
}

namespace {

// softmax(scale * q.k) @ v in double over rows [0, i] (causal) or all rows,
// straight from the definition, for every row and query head.
std::vector<double> plain_attention(const test::Stream& s, bool causal) {
  const AttentionShape& sh = s.shape;
  const double scale = 1.0 / std::sqrt(static_cast<double>(sh.head_dim));
  std::vector<double> out;
  for (uint32_t i = 0; i < s.rows; ++i)
    for (uint32_t h = 0; h < sh.heads_q; ++h) {
      const uint32_t g = h / sh.group();
      const uint32_t last = causal ? i : s.rows - 1;
      std::vector<double> logits;
      for (uint32_t j = 0; j <= last; ++j) {
        double dot = 0.0;
        for (uint32_t d = 0; d < sh.head_dim; ++d)
          dot += double{s.q[(i * sh.heads_q + h) * sh.head_dim + d]} * s.k[(j * sh.heads_kv + g) * sh.head_dim + d];
        logits.push_back(scale * dot);
      }
      const double top = *std::max_element(logits.begin(), logits.end());
      double sum = 0.0;
      for (double& l : logits) sum += (l = std::exp(l - top));
      for (uint32_t d = 0; d < sh.head_dim; ++d) {
        double o = 0.0;
        for (uint32_t j = 0; j <= last; ++j) o += logits[j] / sum * s.v[(j * sh.heads_kv + g) * sh.head_dim + d];
        out.push_back(o);
      }
    }
  return out;
}

void check_plain_attention(const std::string& extra_flags, bool causal) {
  const uint32_t T = 23;
  const test::Stream s = test::random_stream({4, 2, 8}, T, causal ? 5 : 6);
  const std::vector<double> expected = plain_attention(s, causal);
  TempDir dir;
  const std::string args = write_stream(dir, s, false) + extra_flags;
  for (const char* device : {"cpu", "gpu"}) {
    INFO(device);
    const std::string out = dir / device;
    const Outcome o = replay(args + " --device " + device + " --out " + quote(out));
    INFO(o.err);
    REQUIRE(o.code == 0);
    const Files f = read_outputs(out);
    const auto actual = f.outputs.as<float>();
    REQUIRE(actual.size() == expected.size());
    const double tolerance = std::string(device) == "cpu" ? 1e-6 : 2e-4;
    for (size_t i = 0; i < expected.size(); ++i)
      if (!(std::abs(expected[i] - actual[i]) <= tolerance * std::max(1.0, std::abs(expected[i]))))
        FAIL("output " << i << ": expected " << expected[i] << ", got " << actual[i]);
  }
}

}  // namespace

TEST_CASE("replay: N = 0, causal, fifo, M >= T, K = M is ordinary causal attention") {
  check_plain_attention(" --chunk 4 --q-capacity 0 --kv-capacity 23 --top-k 23 --policy fifo --causal", true);
}

TEST_CASE("replay: N >= T, M >= T, K = M is full bidirectional attention") {
  check_plain_attention(" --chunk 4 --q-capacity 23 --kv-capacity 30 --top-k 30 --policy lra_max", false);
}

TEST_CASE("replay: --help documents every option and exits 0") {
  TempDir dir;
  const Outcome o = replay("--help");
  CHECK(o.code == 0);
  CHECK(o.err.empty());
  for (const char* option : {"--q ", "--k ", "--v ", "--valid", "--positions", "--chunk", "--q-capacity",
                             "--kv-capacity", "--top-k", "--policy", "--lambda", "--init-k", "--init-const",
                             "--sinks", "--recent", "--no-protect-new", "--causal", "--scale", "--device", "--out",
                             "--retrieval", "--alibi", "--tags", "--tag-mask", "ATTENDRE_DEVICE"})
    CHECK_MESSAGE(o.out.find(option) != std::string::npos, option);
}


#endif  // ATTENDRE_REPLAY_BINARY
