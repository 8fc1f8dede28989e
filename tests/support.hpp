// Shared by the tests: one validated GPU context per process, random
// streams, and a driver that steps two layers side by side.
#pragma once

#include <attendre/context.hpp>
#include <attendre/layer.hpp>

#include <cstdint>
#include <filesystem>
#include <mutex>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

namespace attendre::test {

// The process-wide context: validation on when ATTENDRE_VALIDATION=1 (ctest
// sets it), portable limits when ATTENDRE_PORTABLE_LIMITS=1.
Context& gpu();

// A context with deliberately tiny limits, so small memories already cross
// select tiles, score tiles and multi-pass merges.
Context& tiny_gpu();

// tiny_gpu() with 16-bit storage switched off: the unpackHalf2x16 reads of
// fp16 weights, memories and activations on any device.
Context& tiny_words_gpu();

// 16-bit loads with shaderFloat16 switched off: the *_a16 builds over fp16
// weights, which multiply in fp32 (gpu() takes the fp16-math builds).
Context& half_loads_fp32_math_gpu();

// Fails the current test with every validation message recorded so far.
void check_no_validation_messages(Context& context);

// Sets an environment variable for the scope, then restores it.
struct ScopedEnv {
  std::string name, old;
  bool had = false;
  ScopedEnv(const char* n, const char* value);
  ~ScopedEnv();
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;
};

// An application's host allocator that counts: every allocation the driver
// (or a layer) makes through callbacks() is live until freed through them,
// so a create and destroy that disagree on the callbacks leave live() above
// zero. Thread-safe: drivers may free from their own threads.
class CountingAllocator {
 public:
  CountingAllocator();
  const VkAllocationCallbacks* callbacks() const { return &callbacks_; }
  uint64_t calls() const;  // allocations, reallocations and frees so far
  uint64_t live() const;   // allocations not yet freed
  uint64_t foreign() const;  // frees and reallocations of memory these callbacks never allocated

 private:
  static void* VKAPI_CALL allocate(void* user, size_t size, size_t alignment, VkSystemAllocationScope);
  static void* VKAPI_CALL reallocate(void* user, void* original, size_t size, size_t alignment,
                                     VkSystemAllocationScope);
  static void VKAPI_CALL release(void* user, void* memory);

  VkAllocationCallbacks callbacks_{};
  mutable std::mutex mutex_;
  std::unordered_map<void*, size_t> sizes_;  // live allocations, for reallocation's copy
  uint64_t calls_ = 0;
  uint64_t foreign_ = 0;
};

struct StreamOptions {
  double invalid_fraction = 0.0;  // rows marked invalid at random
  bool quantized = false;         // values in multiples of 1/4 (exact fp32 dots, many ties)
  uint32_t tag_values = 0;        // > 0: random tags in [0, tag_values)
  int64_t first_position = 0;
  uint32_t max_position_gap = 1;  // positions advance by 1..gap
};

// A recorded stream of T rows for one layer shape (spec section 6 inputs).
struct Stream {
  AttentionShape shape;
  uint32_t rows = 0;
  std::vector<float> q, k, v;
  std::vector<int64_t> positions;
  std::vector<uint8_t> valid;
  std::vector<uint32_t> tags;

  // Rows [first, first + count) as a chunk (count may be less than S).
  ChunkView chunk(uint32_t first, uint32_t count) const;
};

Stream random_stream(const AttentionShape& shape, uint32_t rows, uint64_t seed, const StreamOptions& options = {});

// Per step, what the replay tool records (spec 6).
struct StepRecord {
  std::vector<int64_t> emitted;
  std::vector<float> outputs;
  MemorySnapshot snapshot;
};

// Feeds `stream` through `layer` in chunks of S, then drains (or flushes)
// until no valid query is pending. One record per step.
std::vector<StepRecord> run_stream(AttendreLayer& layer, const Stream& stream, bool flush = false);

// Asserts two runs agree: same emitted positions and retained positions at
// every step, scores and outputs within tolerance (relative to magnitude).
void check_runs_match(const std::vector<StepRecord>& expected, const std::vector<StepRecord>& actual,
                      double score_tolerance, double output_tolerance, const std::string& label);

// A folder unique to this process and test case, removed when it ends.
struct TempDir {
  std::filesystem::path path;
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  std::string operator/(const std::string& name) const { return (path / name).string(); }
};

// A whole file's bytes ("" when it cannot be read).
std::string slurp(const std::filesystem::path& path);

// Runs a built tool as a user would; stdout and stderr come back together.
struct ToolOutcome {
  int exit_code = -1;
  std::string output;
};
ToolOutcome run_tool(const std::string& binary, const std::string& arguments);

// The same with stdout and stderr apart; `shell_prefix` goes before the
// command: "VAR=value " for its environment, "ulimit -v KiB; " for its limits.
struct ToolStreams {
  int code = -1;
  std::string out, err;
};
ToolStreams run_tool_streams(const std::string& binary, const std::string& arguments,
                             const std::string& shell_prefix = "");

}  // namespace attendre::test
