// attendre-replay's refusals: every error path exits non-zero with one
// line naming the problem and leaves no output; results that cannot fit
// are refused before anything is allocated or written; a failed run leaves
// the previous results as they were (output sets, spec section 6).
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

// Rejections must leave nothing behind: the output folder is absent or empty.
void check_no_output(const std::string& out) {
  if (!fs::exists(out)) return;
  for (const auto& entry : fs::directory_iterator(out)) FAIL("left behind: " << entry.path());
}

// Results are staged in hidden folders beside --out; none may outlive a run.
void check_no_staging_folders(const fs::path& parent) {
  for (const auto& entry : fs::directory_iterator(parent))
    if (entry.path().filename().string().find(".attendre-replay-") != std::string::npos)
      FAIL("staging folder left behind: " << entry.path());
}

// A refused run: its exit code, nothing on stdout, and one line on stderr
// that holds `phrase`.
void check_refused(const Outcome& o, int code, const std::string& phrase) {
  CHECK(o.code == code);
  CHECK(o.out.empty());
  CHECK(o.err.rfind("attendre-replay: ", 0) == 0);
  CHECK(o.err.find(phrase) != std::string::npos);
  CHECK(std::count(o.err.begin(), o.err.end(), '\n') == 1);
  CHECK(o.err.back() == '\n');
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
  // A header length field of 9 bytes ends the header right after 'descr':.
  std::string short_header = slurp(dir / "q.npy");
  short_header[8] = 9;
  short_header[9] = 0;
  put_file(dir / "q_short_header.npy", short_header);
  // Rows of more floats than 32 bits count; no data needed at T = 0.
  const int64_t wide_shape[] = {0, 65536, 65536};
  npy::write<float>(dir / "q_wide.npy", wide_shape, std::span<const float>());
  npy::write<float>(dir / "kv_wide.npy", wide_shape, std::span<const float>());

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
      {"rows past 32 bits", q("q_wide.npy") + k("kv_wide.npy") + " --v " + quote(dir / "kv_wide.npy") + layer +
           " --policy lru", 1, "q_wide.npy: shape (0, 65536, 65536): H_q * D = 4294967296 floats per row, more than 2^32 - 1"},
      {"short header length", q("q_short_header.npy") + k("k.npy") + rest, 1,
       "q_short_header.npy: malformed header: expected the 'descr' string where the header ends (header ended at "
       "offset 9; is the header length field too short?)"},
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
    const Outcome o = replay(c.args + (c.add_out ? " --out " + quote(out) : ""));
    INFO(o.err);
    check_refused(o, c.code, c.phrase);
    check_no_output(out);
  }
  check_no_staging_folders(dir.path);
}

TEST_CASE("replay: an output folder that cannot be created is reported") {
  TempDir dir;
  put_file(dir / "not_a_dir", "x");
  const std::string args = write_stream(dir, test::random_stream({2, 1, 4}, 10, 3)) + small_layer;
  const Outcome o = replay(args + " --out " + quote(dir / "not_a_dir/out"));
  check_refused(o, 1, "cannot create the output folder");
  // Before the inputs are read: an absent --q is not what fails.
  const Outcome first = replay(" --q " + quote(dir / "absent.npy") + args.substr(args.find(" --k ")) + " --out " +
                               quote(dir / "not_a_dir/out"));
  check_refused(first, 1, "cannot create the output folder");
}

TEST_CASE("replay: a result name taken by a folder is refused before the run and left alone") {
  TempDir dir;
  const std::string args = write_stream(dir, test::random_stream({2, 1, 4}, 10, 3)) + small_layer;
  // Results replace files in --out; a folder named like one is not a result
  // the run may move aside and delete.
  const std::string out = dir / "blocked";
  fs::create_directories(fs::path(out) / "retained.npy" / "keep");
  const Outcome o = replay(args + " --out " + quote(out));
  INFO(o.err);
  check_refused(o, 1, "blocked/retained.npy: exists and is a folder");
  size_t entries = 0;
  for (const auto& entry : fs::directory_iterator(out)) {
    CHECK(entry.path().filename() == "retained.npy");
    ++entries;
  }
  CHECK(entries == 1);
  CHECK(fs::exists(fs::path(out) / "retained.npy" / "keep"));
  check_no_staging_folders(dir.path);
}

namespace {

// Every entry of a folder with its bytes (sub-folders by name only), to
// compare a folder before and after a failed run.
std::map<std::string, std::string> folder_contents(const fs::path& folder) {
  std::map<std::string, std::string> contents;
  for (const auto& entry : fs::directory_iterator(folder))
    contents[entry.path().filename().string()] = entry.is_regular_file() ? slurp(entry.path()) : "<folder>";
  return contents;
}

// Results that cannot fit are refused before the run allocates or writes
// anything; an address-space limit far below the results' size proves that
// nothing of their size is ever allocated.
const std::string kSmallAddressSpace = "ulimit -v 100000; ";  // KiB, ~98 MiB

}  // namespace

TEST_CASE("replay: results larger than the free disk space are refused at once, with the figures") {
  TempDir dir;
  // 1000 steps x M = 4294967294 (M + S just fits 32 bits) is 62.5 TiB of
  // retained.npy and scores.npy: no test machine has that free.
  const std::string args = write_stream(dir, test::random_stream({1, 1, 2}, 1000, 4), false) +
                           " --chunk 1 --q-capacity 0 --kv-capacity 4294967294 --top-k 1 --policy fifo";
  const std::string out = dir / "out";
  const auto start = std::chrono::steady_clock::now();
  const Outcome o = replay(args + " --device cpu --out " + quote(out), kSmallAddressSpace);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  INFO(o.err);
  CHECK(seconds < 5.0);
  check_refused(o, 1, "attendre-replay: the results need 62.5 TiB (retained.npy and scores.npy are steps x M = 1000 x "
                      "4294967294) but " + dir.path.string() + " has ");
  CHECK(o.err.find(" free; lower --kv-capacity or pick an --out with more space\n") != std::string::npos);
  CHECK(!fs::exists(out));
  check_no_staging_folders(dir.path);
}

TEST_CASE("replay: the cpu path holds what it retains, not steps x M: results larger than its address space") {
  LayerConfig c;
  c.shape = {2, 1, 4};
  c.chunk = 4;
  c.q_capacity = 2;
  c.kv.capacity = 4194304;  // 2^22: retained.npy and scores.npy are 96 MiB each
  c.kv.policy = Policy::lru();
  c.retrieval.top_k = 3;
  const test::Stream s = test::random_stream(c.shape, 10, 3);
  reference::Layer layer(c);
  const std::vector<test::StepRecord> records = test::run_stream(layer, s);

  TempDir dir;
  const Outcome o = replay(write_stream(dir, s) + layer_args(c) + " --device cpu --out " + quote(dir / "out"),
                           kSmallAddressSpace);
  INFO(o.err);
  REQUIRE(o.code == 0);
  const Files f = read_outputs(dir / "out");
  const int64_t M = c.kv.capacity;
  REQUIRE(f.retained.shape == std::vector<int64_t>{static_cast<int64_t>(records.size()), M});
  REQUIRE(f.scores.shape == f.retained.shape);
  const auto retained = f.retained.as<int64_t>();
  const auto scores = f.scores.as<double>();
  for (size_t t = 0; t < records.size(); ++t) {
    CAPTURE(t);
    const MemorySnapshot& snap = records[t].snapshot;
    REQUIRE(!snap.positions.empty());
    const auto row = retained.subspan(t * M, M);
    const auto row_scores = scores.subspan(t * M, M);
    CHECK(std::equal(snap.positions.begin(), snap.positions.end(), row.begin()));
    CHECK(std::equal(snap.scores.begin(), snap.scores.end(), row_scores.begin()));
    CHECK(std::all_of(row.begin() + static_cast<std::ptrdiff_t>(snap.positions.size()), row.end(),
                      [](int64_t p) { return p == -1; }));
    CHECK(std::all_of(row_scores.begin() + static_cast<std::ptrdiff_t>(snap.scores.size()), row_scores.end(),
                      [](double x) { return std::isnan(x); }));
  }
}

TEST_CASE("replay: host memory the cpu reference cannot have is refused with the figure and the flag") {
  // The reference pads each chunk to S rows and holds N + S of them: S = 2^31
  // is 80 GiB or more of rows, N + S = 2^32 - 1 is 160 GiB.
  const uint64_t physical = static_cast<uint64_t>(sysconf(_SC_PHYS_PAGES)) * static_cast<uint64_t>(sysconf(_SC_PAGE_SIZE));
  if (physical >= (uint64_t{160} << 30)) {
    MESSAGE("skipped: this machine has " << (physical >> 30) << " GiB, more than the refusals below need");
    return;
  }
  TempDir dir;
  const std::string inputs = write_stream(dir, test::random_stream({2, 1, 4}, 10, 3), false);
  struct Case {
    std::string flags, figures, advice;
  };
  const Case cases[] = {
      {" --chunk 2147483648 --q-capacity 4 --kv-capacity 64 --no-protect-new",
       "of host memory (its Q memory holds N + S = 4 + 2147483648 query rows, padding included, of 40 bytes or more) "
       "but this machine has ",
       "; lower --chunk\n"},
      {" --chunk 1 --q-capacity 4294967294 --kv-capacity 64",
       "of host memory (its Q memory holds N + S = 4294967294 + 1 query rows", "; lower --q-capacity\n"},
  };
  for (const Case& c : cases) {
    INFO(c.flags);
    const Outcome o = replay(inputs + c.flags + " --top-k 3 --policy lru --device cpu --out " + quote(dir / "out"),
                             kSmallAddressSpace);
    INFO(o.err);
    check_refused(o, 1, "attendre-replay: the cpu reference needs at least ");
    CHECK(o.err.find(c.figures) != std::string::npos);
    CHECK(o.err.find(c.advice) != std::string::npos);
    CHECK(!fs::exists(dir / "out"));
  }
}

TEST_CASE("replay: limits name the flag the user gave") {
  TempDir dir;
  const std::string inputs = write_stream(dir, test::random_stream({2, 1, 4}, 10, 3), false);
  struct Case {
    std::string flags;
    int code;
    std::string message;
    std::vector<const char*> devices = {"cpu", "gpu"};
  };
  const Case cases[] = {
      {" --chunk 16 --q-capacity 4294967295 --kv-capacity 64 --top-k 3", 2,
       "--q-capacity 4294967295: N + S = 4294967295 + 16 = 4294967311 rows, more than the layer counts in 32 bits (at "
       "most 4294967295); lower --q-capacity (see --help)"},
      {" --chunk 4294967295 --q-capacity 4 --kv-capacity 64 --top-k 3 --no-protect-new", 2,
       "--chunk 4294967295: N + S = 4 + 4294967295 = 4294967299 rows, more than the layer counts in 32 bits (at most "
       "4294967295); lower --chunk (see --help)"},
      {" --chunk 2 --q-capacity 4 --kv-capacity 4294967295 --top-k 3", 2,
       "--kv-capacity 4294967295: M + S = 4294967295 + 2 = 4294967297 rows"},
      {" --chunk 4 --q-capacity 2 --kv-capacity 5 --sinks 2 --top-k 3", 1,
       "infeasible: protect_new needs M >= S + n_sink, got M=5 S=4 n_sink=2 (M is --kv-capacity, S is --chunk, n_sink "
       "is --sinks)"},
      {" --chunk 4 --q-capacity 2 --kv-capacity 9 --sinks 2 --recent 8 --top-k 3", 1,
       "infeasible: the recent window needs M >= n_sink + max(S, W) under protect_new, got M=9 S=4 n_sink=2 W=8 "
       "(M is --kv-capacity, S is --chunk, n_sink is --sinks, W is --recent)"},
      // The GPU's limit on S (at most 2048 on every device) comes from the library.
      {" --chunk 4096 --q-capacity 2 --kv-capacity 8192 --top-k 3", 1, " (S is --chunk)", {"gpu"}},
  };
  for (const Case& c : cases)
    for (const char* device : c.devices) {
      INFO(c.flags << " --device " << device);
      const Outcome o =
          replay(inputs + c.flags + " --policy lru --device " + device + " --out " + quote(dir / "out"));
      INFO(o.err);
      check_refused(o, c.code, c.message);
      CHECK(o.err.find("out of host memory") == std::string::npos);
      CHECK(!fs::exists(dir / "out"));
    }
}

TEST_CASE("replay: bad data names the file and its row, not a row of a chunk") {
  TempDir dir;
  const test::Stream s = test::random_stream({2, 1, 8}, 40, 5);
  const std::string layer = " --chunk 16 --q-capacity 8 --kv-capacity 32 --top-k 4 --policy lru";
  write_stream(dir, s);
  const int64_t T = s.rows, q_shape[] = {T, 2, 8}, kv_shape[] = {T, 1, 8}, rows[] = {T};
  const auto save = [&](const std::string& name, const int64_t* shape, std::vector<float> values, size_t at,
                        float x) {
    values[at] = x;
    npy::write<float>(dir / name, std::span<const int64_t>(shape, 3), values);
  };
  // File row 39 is row 7 of the third chunk of 16: the message must say 39.
  save("q_nan.npy", q_shape, s.q, (39 * 2 + 1) * 8 + 5, std::numeric_limits<float>::quiet_NaN());
  save("k_inf.npy", kv_shape, s.k, 17 * 8 + 2, std::numeric_limits<float>::infinity());
  save("v_inf.npy", kv_shape, s.v, 0 * 8 + 7, -std::numeric_limits<float>::infinity());
  std::vector<int64_t> far(s.positions);
  for (size_t r = 3; r < far.size(); ++r) far[r] += int64_t{3000000000};
  npy::write<int64_t>(dir / "far.npy", rows, far);

  const auto files = [&](const char* q, const char* k, const char* v) {
    return " --q " + quote(dir / q) + " --k " + quote(dir / k) + " --v " + quote(dir / v);
  };
  struct Case {
    std::string args, message;
  };
  const Case cases[] = {
      {files("q_nan.npy", "k.npy", "v.npy"), "q_nan.npy: row 39 (head 1, dim 5): NaN, expected finite values in "
                                             "every valid row"},
      {files("q.npy", "k_inf.npy", "v.npy"), "k_inf.npy: row 17 (head 0, dim 2): inf"},
      {files("q.npy", "k.npy", "v_inf.npy"), "v_inf.npy: row 0 (head 0, dim 7): -inf"},
      {files("q.npy", "k.npy", "v.npy") + " --positions " + quote(dir / "far.npy") + " --device gpu",
       "far.npy: row 3 holds 3000000003, outside the int32 positions of --device gpu (--device cpu takes int64)"},
  };
  for (const Case& c : cases) {
    INFO(c.args);
    const Outcome o = replay(c.args + layer + " --out " + quote(dir / "out"));
    INFO(o.err);
    check_refused(o, 1, c.message);
    CHECK(!fs::exists(dir / "out"));
  }

  // Invalid rows are never read, so what they hold does not matter; the cpu
  // reference takes int64 positions.
  std::vector<uint8_t> valid(s.valid);
  valid[39] = 0;
  npy::write<uint8_t>(dir / "valid39.npy", rows, valid);
  const Outcome skipped = replay(files("q_nan.npy", "k.npy", "v.npy") + " --valid " + quote(dir / "valid39.npy") +
                                          layer + " --out " + quote(dir / "skipped"));
  INFO(skipped.err);
  CHECK(skipped.code == 0);
  const Outcome wide = replay(files("q.npy", "k.npy", "v.npy") + " --positions " + quote(dir / "far.npy") +
                                       layer + " --device cpu --out " + quote(dir / "wide"));
  INFO(wide.err);
  CHECK(wide.code == 0);
}

TEST_CASE("replay: inputs and parameters that would overflow float32 are refused on both devices and never written as NaN") {
  TempDir dir;
  const test::Stream s = test::random_stream({2, 1, 8}, 40, 6);
  write_stream(dir, s);
  const int64_t T = s.rows, q_shape[] = {T, 2, 8}, kv_shape[] = {T, 1, 8};
  // Queries near 3e38 in file row 21: finite in float32, but their logits are not.
  std::vector<float> huge_q(s.q);
  for (size_t i = 21 * 16; i < 22 * 16; ++i) huge_q[i] = 3e38f;
  npy::write<float>(dir / "q_huge.npy", std::span<const int64_t>(q_shape, 3), huge_q);
  std::vector<float> huge_v(s.v);
  huge_v[30 * 8 + 3] = 3e38f;
  npy::write<float>(dir / "v_huge.npy", std::span<const int64_t>(kv_shape, 3), huge_v);
  const std::string stream = " --q " + quote(dir / "q.npy") + " --k " + quote(dir / "k.npy") + " --v " + quote(dir / "v.npy");
  const std::string layer = " --chunk 16 --q-capacity 8 --kv-capacity 32 --top-k 4";
  struct Case {
    std::string args, message;
  };
  const Case cases[] = {
      {" --q " + quote(dir / "q_huge.npy") + " --k " + quote(dir / "k.npy") + " --v " + quote(dir / "v.npy") +
           layer + " --policy lra_sum",
       "q_huge.npy: row 21 and "},
      {" --q " + quote(dir / "q.npy") + " --k " + quote(dir / "k.npy") + " --v " + quote(dir / "v_huge.npy") +
           layer + " --policy lra_sum",
       "v_huge.npy: row 30 holds |v| = 3e+38"},
      {stream + layer + " --policy lra_sum --scale 1e300", "scale is 1e+300"},
      {stream + layer + " --policy lfa --lambda 1e308", "lfa lambda is 1e+308"},
      {stream + layer + " --policy lra_max --init-k 1e308", "initial score k is 1e+308"},
  };
  for (const char* device : {" --device cpu", " --device gpu"})
    for (const Case& c : cases) {
      INFO(c.args << device);
      const Outcome o = replay(c.args + device + " --out " + quote(dir / "out"));
      INFO(o.err);
      check_refused(o, 1, c.message);
      CHECK(!fs::exists(dir / "out"));
    }
}

TEST_CASE("replay: a failed run leaves the previous results byte-identical and nothing new behind") {
  TempDir dir;
  const std::string inputs = write_stream(dir, test::random_stream({2, 1, 4}, 10, 3));
  const std::string layer = " --chunk 4 --q-capacity 2 --kv-capacity 6 --policy lru";
  const std::string out = dir / "out";
  const Outcome first = replay(inputs + layer + " --top-k 3 --out " + quote(out));
  INFO(first.err);
  REQUIRE(first.code == 0);
  const auto parent_before = folder_contents(dir.path);
  const auto results_before = folder_contents(out);
  REQUIRE(results_before.size() == 3);

  // The second run differs (another K), so a run that went through would
  // change the files; each failure point must leave them as they were.
  for (const char* point : {"write", "replace"}) {
    INFO(std::string(point));
    const Outcome o = replay(inputs + layer + " --top-k 2 --out " + quote(out),
                             std::string("ATTENDRE_REPLAY_INJECT_FAILURE=") + point + " ");
    INFO(o.err);
    CHECK(o.code == 1);
    CHECK(o.err == std::string("attendre-replay: injected failure at '") + point +
                       "' (ATTENDRE_REPLAY_INJECT_FAILURE)\n");
    CHECK(folder_contents(out) == results_before);
    CHECK(folder_contents(dir.path) == parent_before);
  }
  // And without a failure, the same run does replace them.
  const Outcome third = replay(inputs + layer + " --top-k 2 --out " + quote(out));
  CHECK(third.code == 0);
  CHECK(folder_contents(out) != results_before);
  CHECK(folder_contents(dir.path).size() == parent_before.size());
}

TEST_CASE("replay: a failed run into a fresh folder leaves no folder") {
  TempDir dir;
  const std::string args = write_stream(dir, test::random_stream({2, 1, 4}, 10, 3)) + small_layer;
  const auto before = folder_contents(dir.path);
  for (const char* point : {"write", "rename"}) {
    INFO(std::string(point));
    // Missing parents are created for the run and must go with it.
    const Outcome o = replay(args + " --out " + quote(dir / "new/sub/out"),
                             std::string("ATTENDRE_REPLAY_INJECT_FAILURE=") + point + " ");
    INFO(o.err);
    CHECK(o.code == 1);
    CHECK(o.err.find("injected failure") != std::string::npos);
    CHECK(folder_contents(dir.path) == before);
  }
  const Outcome o = replay(args + " --out " + quote(dir / "new/sub/out"));
  CHECK(o.code == 0);
  CHECK(folder_contents(dir / "new/sub/out").size() == 3);
}

#endif  // ATTENDRE_REPLAY_BINARY

