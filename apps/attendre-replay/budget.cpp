#include "budget.hpp"

#include "result_files.hpp"
#include "core/fail.hpp"

#include <attendre/error.hpp>

#include <algorithm>
#include <cstdio>
#include <limits>
#include <system_error>
#include <vector>

#include <unistd.h>

namespace attendre::replay {
namespace fs = std::filesystem;
namespace {

// Saturating: a figure past 2^64 bytes is simply "too much".
uint64_t times(uint64_t a, uint64_t b) {
  uint64_t product = 0;
  return __builtin_mul_overflow(a, b, &product) ? std::numeric_limits<uint64_t>::max() : product;
}

uint64_t plus(uint64_t a, uint64_t b) {
  uint64_t sum = 0;
  return __builtin_add_overflow(a, b, &sum) ? std::numeric_limits<uint64_t>::max() : sum;
}

// One cost of a run, and what to tell the user when it is the largest.
struct Cost {
  uint64_t bytes = 0;
  std::string what;    // why it is that large, in the user's terms
  std::string advice;  // the flag to change
};

struct Total {
  uint64_t bytes = 0;
  const Cost* largest = nullptr;
};

Total add_up(const std::vector<Cost>& costs) {
  Total total;
  for (const Cost& cost : costs) {
    total.bytes = plus(total.bytes, cost.bytes);
    if (!total.largest || cost.bytes > total.largest->bytes) total.largest = &cost;
  }
  return total;
}

std::string u(uint64_t value) { return std::to_string(value); }

// A header and the file system's last partial block, per result file.
constexpr uint64_t kFileOverheadBytes = 4096;

// A row of the reference's Q memory without its query: position, valid flag
// and tag, and the header of its query vector. Padding rows are rows too,
// and the reference holds up to N + S of them.
constexpr uint64_t kReferenceRowBytes = 16 + sizeof(std::vector<double>);

// The folder whose file system the results will land on: --out, or the
// nearest parent that exists (the missing ones are created on its file system).
fs::path existing_folder(const fs::path& out) {
  std::error_code ec;
  fs::path folder = fs::absolute(out, ec).lexically_normal();
  while (!fs::is_directory(folder, ec) && folder.has_parent_path() && folder != folder.parent_path())
    folder = folder.parent_path();
  return folder;
}

}  // namespace

void check_disk_space(const Options& o, const Inputs& in, const LayerConfig& c, uint64_t steps) {
  const uint64_t M = c.kv.capacity;
  const uint64_t chunks = (in.rows + c.chunk - 1) / c.chunk, drain = steps - chunks;
  // The step files grow with steps x M; which factor to lower is the larger one.
  std::string step_advice = "lower --kv-capacity";
  if (M < steps)
    step_advice = drain > chunks ? "lower --q-capacity (" + u(drain) + " of the " + u(steps) + " steps drain it)"
                                 : "raise --chunk";
  const std::vector<Cost> costs = {
      {times(times(in.rows, c.shape.q_row()), sizeof(float)),
       "outputs.npy is T x H_q x D = " + u(in.rows) + " x " + u(c.shape.heads_q) + " x " + u(c.shape.head_dim) +
           " floats",
       "shorten the stream"},
      {times(times(steps, M), sizeof(int64_t) + sizeof(double)),
       "retained.npy and scores.npy are steps x M = " + u(steps) + " x " + u(M), step_advice},
      {times(ResultFiles::kNames.size(), kFileOverheadBytes), "file headers", "free some space"},
  };
  const Total need = add_up(costs);

  const fs::path folder = existing_folder(o.out_dir);
  std::error_code ec;
  const fs::space_info space = fs::space(folder, ec);
  if (ec) fail(ErrorCode::io_error, folder.string() + ": cannot query the free space for --out: " + ec.message());
  if (need.bytes <= space.available) return;
  fail(ErrorCode::io_error, "the results need " + human_bytes(need.bytes) + " (" + need.largest->what + ") but " +
                                folder.string() + " has " + human_bytes(space.available) + " free; " +
                                need.largest->advice + " or pick an --out with more space");
}

void check_host_memory(const Options& o, const Inputs& in, const LayerConfig& c, uint64_t steps) {
  const uint64_t T = in.rows, N = c.q_capacity, S = c.chunk, M = c.kv.capacity;
  std::vector<Cost> costs = {
      {plus(plus(in.q.data.size(), in.k.data.size()), in.v.data.size()), "the inputs q, k and v",
       "shorten the stream"},
      {plus(times(times(T, c.shape.q_row()), sizeof(float)), times(T, sizeof(uint64_t) + 1)),
       "outputs.npy's T x H_q x D floats, held until every row is emitted", "shorten the stream"},
  };
  const bool cpu = o.device == Device::cpu;
  if (cpu) {
    // The reference's Q memory holds up to N + S rows, padding included (but
    // never more than the run inserts), plus the step's chunk padded to S.
    const uint64_t rows_held = plus(std::min(plus(N, S), times(steps, S)), S);
    costs.push_back({times(rows_held, kReferenceRowBytes),
                     "its Q memory holds N + S = " + u(N) + " + " + u(S) + " query rows, padding included, of " +
                         u(kReferenceRowBytes) + " bytes or more",
                     N > S ? "lower --q-capacity" : "lower --chunk"});
    costs.push_back({times(times(std::min(plus(N, S), T), c.shape.q_row()), sizeof(double)),
                     "its Q memory holds the waiting queries in float64", "lower --q-capacity"});
    costs.push_back({times(times(std::min(M, T), c.shape.kv_row()), 2 * sizeof(double)),
                     "its K/V memory holds min(M, T) keys and values in float64", "lower --kv-capacity"});
  }
  const Total need = add_up(costs);
  const long pages = ::sysconf(_SC_PHYS_PAGES), page_size = ::sysconf(_SC_PAGE_SIZE);
  if (pages <= 0 || page_size <= 0) return;  // unknown: nothing to compare with
  const uint64_t physical = times(static_cast<uint64_t>(pages), static_cast<uint64_t>(page_size));
  if (need.bytes <= physical) return;
  fail(ErrorCode::out_of_host_memory, std::string(cpu ? "the cpu reference" : "the replay") + " needs at least " +
                                          human_bytes(need.bytes) + " of host memory (" + need.largest->what +
                                          ") but this machine has " + human_bytes(physical) + "; " +
                                          need.largest->advice);
}

}  // namespace attendre::replay
