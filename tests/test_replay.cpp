// attendre-replay run as a user would (spec section 6): its files against
// the reference layer driven directly, the spec's attention invariants
// through the command line, and every error path leaving no output.
#ifdef ATTENDRE_REPLAY_BINARY

#include "support.hpp"

#include <attendre/npy.hpp>
#include <attendre/reference.hpp>

#include <doctest/doctest.h>

#include <sys/wait.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

using namespace attendre;
namespace fs = std::filesystem;

namespace {

using attendre::test::TempDir;

using attendre::test::slurp;

void put_file(const fs::path& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out << bytes;
}

std::string quote(const std::string& s) { return "'" + s + "'"; }

struct Outcome {
  int code = -1;
  std::string out, err;
};

// Runs the tool with `args` (already quoted where needed), capturing both
// streams through files in `dir`.
Outcome replay(const TempDir& dir, const std::string& args) {
  const std::string out = dir / "stdout.txt", err = dir / "stderr.txt";
  const std::string command = quote(ATTENDRE_REPLAY_BINARY) + " " + args + " >" + quote(out) + " 2>" + quote(err);
  const int status = std::system(command.c_str());
  Outcome o;
  if (status != -1 && WIFEXITED(status)) o.code = WEXITSTATUS(status);
  o.out = slurp(out);
  o.err = slurp(err);
  fs::remove(out);
  fs::remove(err);
  return o;
}

// Writes the stream's arrays and returns the matching input flags.
std::string write_stream(const TempDir& dir, const test::Stream& s, bool valid_and_positions = true) {
  const AttentionShape& sh = s.shape;
  const int64_t T = s.rows;
  const int64_t q_shape[] = {T, sh.heads_q, sh.head_dim}, kv_shape[] = {T, sh.heads_kv, sh.head_dim}, row_shape[] = {T};
  npy::write<float>(dir / "q.npy", q_shape, s.q);
  npy::write<float>(dir / "k.npy", kv_shape, s.k);
  npy::write<float>(dir / "v.npy", kv_shape, s.v);
  std::string args = "--q " + quote(dir / "q.npy") + " --k " + quote(dir / "k.npy") + " --v " + quote(dir / "v.npy");
  if (!valid_and_positions) return args;
  npy::write<uint8_t>(dir / "valid.npy", row_shape, s.valid);
  npy::write<int64_t>(dir / "positions.npy", row_shape, s.positions);
  return args + " --valid " + quote(dir / "valid.npy") + " --positions " + quote(dir / "positions.npy");
}

// The flags describing `c`; only what these tests vary.
std::string layer_args(const LayerConfig& c) {
  std::ostringstream a;
  a.precision(17);
  a << " --chunk " << c.chunk << " --q-capacity " << c.q_capacity << " --kv-capacity " << c.kv.capacity
    << " --top-k=" << c.retrieval.top_k << " --policy " << to_string(c.kv.policy.kind);
  if (c.kv.policy.kind == PolicyKind::lfa) a << " --lambda " << c.kv.policy.lambda;
  if (c.kv.policy.attention_scored()) a << " --init-k " << c.kv.policy.initial.k;
  if (c.kv.n_sink) a << " --sinks " << c.kv.n_sink;
  if (!c.kv.protect_new) a << " --no-protect-new";
  if (c.retrieval.causal) a << " --causal";
  if (c.retrieval.mode == RetrievalMode::shared) a << " --retrieval shared";
  if (c.retrieval.bias == BiasKind::alibi) a << " --alibi";
  if (c.retrieval.tag_mask) a << " --tag-mask";
  return a.str();
}

struct Files {
  npy::Array outputs, retained, scores;
};

Files read_outputs(const std::string& dir) {
  return {npy::read_expect(dir + "/outputs.npy", npy::DType::f32, 3),
          npy::read_expect(dir + "/retained.npy", npy::DType::i64, 2),
          npy::read_expect(dir + "/scores.npy", npy::DType::f64, 2)};
}

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
  const Outcome cpu = replay(dir, args + " --device cpu --out " + quote(dir / "cpu"));
  INFO(cpu.err);
  REQUIRE(cpu.code == 0);
  CHECK(cpu.err.empty());
  CHECK(cpu.out.rfind("replayed T=37 rows in " + std::to_string(e.steps) + " steps", 0) == 0);
  CHECK(std::count(cpu.out.begin(), cpu.out.end(), '\n') == 1);
  const Files cpu_files = read_outputs(dir / "cpu");
  check_files(e, cpu_files, s, c.kv.capacity, 0.0);

  const Outcome gpu = replay(dir, args + " --device gpu --out " + quote(dir / "gpu"));
  INFO(gpu.err);
  REQUIRE(gpu.code == 0);
  CHECK(gpu.err.empty());
  check_files(e, read_outputs(dir / "gpu"), s, c.kv.capacity, 2e-4);
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
  const Outcome o = replay(dir, write_stream(dir, s, false) + layer_args(c) + " --tags " +
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
    const Outcome o = replay(dir, args + " --device " + device + " --out " + quote(out));
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
  const Outcome o = replay(dir, "--help");
  CHECK(o.code == 0);
  CHECK(o.err.empty());
  for (const char* option : {"--q ", "--k ", "--v ", "--valid", "--positions", "--chunk", "--q-capacity",
                             "--kv-capacity", "--top-k", "--policy", "--lambda", "--init-k", "--init-const",
                             "--sinks", "--no-protect-new", "--causal", "--scale", "--device", "--out",
                             "--retrieval", "--alibi", "--tags", "--tag-mask", "ATTENDRE_DEVICE"})
    CHECK_MESSAGE(o.out.find(option) != std::string::npos, option);
}

namespace {

// Rejections must leave nothing behind: the output folder is absent or empty.
void check_no_output(const std::string& out) {
  if (!fs::exists(out)) return;
  for (const auto& entry : fs::directory_iterator(out)) FAIL("left behind: " << entry.path());
}

const std::string small_layer = " --chunk 4 --q-capacity 2 --kv-capacity 6 --top-k 3 --policy lru";

struct ErrorCase {
  const char* name;
  std::string args;
  int code;
  const char* phrase;
  bool add_out = true;  // append --out DIR
};

}  // namespace

TEST_CASE("replay: errors exit non-zero with one line naming the problem and write nothing") {
  TempDir dir;
  const test::Stream s = test::random_stream({2, 1, 4}, 10, 3);
  const std::string inputs = write_stream(dir, s);
  const std::string layer = " --chunk 4 --q-capacity 2 --kv-capacity 6 --top-k 3";
  const std::string good = inputs + small_layer;
  const int64_t T = s.rows;

  // Bad files beside the good ones.
  const std::vector<double> q64(s.q.begin(), s.q.end());
  const int64_t q_shape[] = {T, 2, 4}, short_shape[] = {T - 1, 1, 4}, rows[] = {T};
  npy::write<double>(dir / "q64.npy", q_shape, q64);
  npy::write<float>(dir / "k_short.npy", short_shape, std::span<const float>(s.k).first(s.k.size() - 4));
  const std::vector<float> q3(T * 3 * 4, 0.5f), kv2(T * 2 * 4, 0.25f);
  const int64_t q3_shape[] = {T, 3, 4}, kv2_shape[] = {T, 2, 4};
  npy::write<float>(dir / "q3.npy", q3_shape, q3);
  npy::write<float>(dir / "kv2.npy", kv2_shape, kv2);
  fs::copy_file(dir / "q.npy", dir / "q_cut.npy");
  fs::resize_file(dir / "q_cut.npy", fs::file_size(dir / "q_cut.npy") - 6);
  std::vector<int64_t> backwards(s.positions);
  backwards[7] = backwards[5];
  npy::write<int64_t>(dir / "backwards.npy", rows, backwards);
  std::vector<uint8_t> two(s.valid);
  two[4] = 2;
  npy::write<uint8_t>(dir / "two.npy", rows, two);

  const auto q = [&](const std::string& file) { return " --q " + quote(dir / file); };
  const auto k = [&](const std::string& file) { return " --k " + quote(dir / file); };
  const std::string rest = " --v " + quote(dir / "v.npy") + small_layer;
  const std::vector<ErrorCase> cases = {
      {"unknown flag", good + " --bogus", 2, "unknown option '--bogus'"},
      {"missing --out", good, 2, "missing required option --out", false},
      {"missing value", good + " --out", 2, "--out: missing value", false},
      {"bad number", inputs + " --chunk 4x --q-capacity 2 --kv-capacity 6 --top-k 3 --policy lru", 2,
       "--chunk: expected a positive integer, got '4x'"},
      {"negative capacity", inputs + " --chunk 4 --q-capacity -1 --kv-capacity 6 --top-k 3 --policy lru", 2,
       "--q-capacity: expected a non-negative integer, got '-1'"},
      {"zero top-k", inputs + " --chunk 4 --q-capacity 2 --kv-capacity 6 --top-k 0 --policy lru", 2,
       "--top-k: expected a positive integer"},
      {"bad policy", inputs + layer + " --policy lfu2", 2, "--policy: expected one of"},
      {"bad device", good + " --device tpu", 2, "--device: expected cpu or gpu"},
      {"repeated flag", good + " --chunk 4", 2, "--chunk: given more than once"},
      {"--lambda with lru", good + " --lambda 0.1", 2, "--lambda only applies to --policy lfa"},
      {"--init-k with fifo", inputs + layer + " --policy fifo --init-k 2", 2, "--init-k only applies"},
      {"both initial scores", inputs + layer + " --policy lra_sum --init-k 2 --init-const 0", 2, "are exclusive"},
      {"nan scale", good + " --scale nan", 2, "--scale: expected a finite number"},
      {"missing file", q("nope.npy") + k("k.npy") + rest, 1, "nope.npy: cannot open"},
      {"float64 q", q("q64.npy") + k("k.npy") + rest, 1, "q64.npy: dtype is <f8, expected float32"},
      {"k with different T", q("q.npy") + k("k_short.npy") + rest, 1, "k_short.npy: shape (9, 1, 4), expected (10,"},
      {"H_q not a multiple of H_kv", q("q3.npy") + k("kv2.npy") + " --v " + quote(dir / "kv2.npy") + layer +
           " --policy lru", 1, "is not a multiple"},
      {"truncated q", q("q_cut.npy") + k("k.npy") + rest, 1, "q_cut.npy: truncated"},
      {"non-increasing positions", q("q.npy") + k("k.npy") + rest + " --positions " + quote(dir / "backwards.npy"), 1,
       "backwards.npy: positions must strictly increase"},
      {"valid flag 2", q("q.npy") + k("k.npy") + rest + " --valid " + quote(dir / "two.npy"), 1,
       "two.npy: row 4 holds 2, expected 0 or 1"},
      {"infeasible", inputs + " --chunk 4 --q-capacity 2 --kv-capacity 5 --sinks 2 --top-k 3 --policy fifo", 1,
       "infeasible: protect_new needs M >= S + n_sink"},
      {"infeasible on gpu", inputs + " --chunk 4 --q-capacity 2 --kv-capacity 3 --top-k 3 --policy fifo --device gpu",
       1, "infeasible"},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    const ErrorCase& c = cases[i];
    INFO(std::string(c.name));
    const std::string out = dir / ("out" + std::to_string(i));
    const Outcome o = replay(dir, c.args + (c.add_out ? " --out " + quote(out) : ""));
    INFO(o.err);
    CHECK(o.code == c.code);
    CHECK(o.out.empty());
    CHECK(o.err.rfind("attendre-replay: ", 0) == 0);
    CHECK(o.err.find(c.phrase) != std::string::npos);
    CHECK(std::count(o.err.begin(), o.err.end(), '\n') == 1);
    CHECK(o.err.back() == '\n');
    check_no_output(out);
  }
}

TEST_CASE("replay: an output folder that cannot be created is reported") {
  TempDir dir;
  put_file(dir / "not_a_dir", "x");
  const std::string args = write_stream(dir, test::random_stream({2, 1, 4}, 10, 3)) + small_layer;
  const Outcome o = replay(dir, args + " --out " + quote(dir / "not_a_dir/out"));
  CHECK(o.code == 1);
  CHECK(o.err.find("cannot create the output folder") != std::string::npos);
  CHECK(std::count(o.err.begin(), o.err.end(), '\n') == 1);
}

TEST_CASE("replay: a failed write removes the files this run wrote before it") {
  TempDir dir;
  const std::string args = write_stream(dir, test::random_stream({2, 1, 4}, 10, 3)) + small_layer;
  // A folder where retained.npy goes: outputs.npy is written, then the
  // rename onto retained.npy fails.
  const std::string out = dir / "blocked";
  fs::create_directories(fs::path(out) / "retained.npy" / "keep");
  const Outcome o = replay(dir, args + " --out " + quote(out));
  INFO(o.err);
  CHECK(o.code == 1);
  CHECK(o.err.find("retained.npy") != std::string::npos);
  CHECK(std::count(o.err.begin(), o.err.end(), '\n') == 1);
  size_t entries = 0;
  for (const auto& entry : fs::directory_iterator(out)) {
    CHECK(entry.path().filename() == "retained.npy");
    ++entries;
  }
  CHECK(entries == 1);
  CHECK(fs::exists(fs::path(out) / "retained.npy" / "keep"));
}

#endif  // ATTENDRE_REPLAY_BINARY
