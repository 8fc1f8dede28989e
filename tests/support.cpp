#include "support.hpp"

#include <attendre/diagnostics.hpp>
#include <attendre/error.hpp>

#include <doctest/doctest.h>

#include <sys/wait.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <fstream>
#include <iterator>
#include <array>
#include <cstdio>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>

namespace attendre::test {

ScopedEnv::ScopedEnv(const char* n, const char* value) : name(n) {
  if (const char* v = std::getenv(n)) old = v, had = true;
  setenv(n, value, 1);
}
ScopedEnv::~ScopedEnv() { had ? setenv(name.c_str(), old.c_str(), 1) : unsetenv(name.c_str()); }

CountingAllocator::CountingAllocator() {
  callbacks_.pUserData = this;
  callbacks_.pfnAllocation = allocate;
  callbacks_.pfnReallocation = reallocate;
  callbacks_.pfnFree = release;
}

uint64_t CountingAllocator::calls() const {
  std::lock_guard lock(mutex_);
  return calls_;
}

uint64_t CountingAllocator::foreign() const {
  std::lock_guard lock(mutex_);
  return foreign_;
}

uint64_t CountingAllocator::live() const {
  std::lock_guard lock(mutex_);
  return sizes_.size();
}

void* VKAPI_CALL CountingAllocator::allocate(void* user, size_t size, size_t alignment, VkSystemAllocationScope) {
  auto* self = static_cast<CountingAllocator*>(user);
  // aligned_alloc wants a power-of-two alignment of at least a pointer and a
  // size that is a multiple of it.
  const size_t align = std::max(alignment, sizeof(void*));
  void* memory = std::aligned_alloc(align, (std::max<size_t>(size, 1) + align - 1) / align * align);
  std::lock_guard lock(self->mutex_);
  ++self->calls_;
  if (memory) self->sizes_[memory] = size;
  return memory;
}

void* VKAPI_CALL CountingAllocator::reallocate(void* user, void* original, size_t size, size_t alignment,
                                               VkSystemAllocationScope scope) {
  auto* self = static_cast<CountingAllocator*>(user);
  if (!original) return allocate(user, size, alignment, scope);
  if (size == 0) {
    release(user, original);
    return nullptr;
  }
  size_t old_size = 0;
  {
    std::lock_guard lock(self->mutex_);
    ++self->calls_;
    const auto it = self->sizes_.find(original);
    if (it == self->sizes_.end()) {
      ++self->foreign_;
      return nullptr;
    }
    old_size = it->second;
  }
  void* memory = allocate(user, size, alignment, scope);
  if (!memory) return nullptr;  // the original stays valid, as the spec asks
  std::memcpy(memory, original, std::min(old_size, size));
  release(user, original);
  return memory;
}

void VKAPI_CALL CountingAllocator::release(void* user, void* memory) {
  if (!memory) return;
  auto* self = static_cast<CountingAllocator*>(user);
  {
    std::lock_guard lock(self->mutex_);
    ++self->calls_;
    // Memory these callbacks did not allocate: a destroy given callbacks the
    // matching create was not. Counted (no test macro: drivers may call from
    // their own threads) and left alone rather than freed as ours.
    if (self->sizes_.erase(memory) == 0) {
      ++self->foreign_;
      return;
    }
  }
  std::free(memory);
}

// The suite's contexts take 16-bit and 8-bit loads wherever the device has
// 16-bit and 8-bit storage, and fp16 products wherever it also has
// shaderFloat16, lavapipe's quirks half_loads_lane_by_lane,
// byte_loads_lane_by_lane and half_math_emulated notwithstanding, so the
// 16-bit, int8 and fp16-math builds run here; the words builds run on
// tiny_words_gpu(), on contexts without the preference and in the
// features-off reruns, the 16-bit builds with fp32 math on
// half_loads_fp32_math_gpu().
namespace {
ContextOptions preferring_narrow_types() {
  ContextOptions options;
  options.prefer_half_loads = options.prefer_byte_loads = options.prefer_half_math = true;
  return options;
}
}  // namespace

Context& gpu() {
  static std::unique_ptr<Context> context = Context::create(preferring_narrow_types()).value_or_throw();
  return *context;
}

Context& tiny_gpu() {
  static std::unique_ptr<Context> context = [] {
    ContextOptions options = preferring_narrow_types();
    options.limits = LimitOverrides{32u, 1536u, std::nullopt};  // 32 invocations, 64-entry select tiles
    return Context::create(options).value_or_throw();
  }();
  return *context;
}

Context& tiny_words_gpu() {
  static std::unique_ptr<Context> context = [] {
    ContextOptions options;
    options.limits = LimitOverrides{32u, 1536u, std::nullopt};
    options.disabled_features = FeatureSet{}.add(Feature::storage_16bit);
    return Context::create(options).value_or_throw();
  }();
  return *context;
}

Context& half_loads_fp32_math_gpu() {
  static std::unique_ptr<Context> context = [] {
    ContextOptions options;
    options.prefer_half_loads = true;
    options.disabled_features = FeatureSet{}.add(Feature::float16);
    return Context::create(options).value_or_throw();
  }();
  return *context;
}

void check_no_validation_messages(Context& context) {
  const std::vector<std::string> messages = validation_messages(context);
  for (const std::string& m : messages) FAIL_CHECK("validation: " << m);
  clear_validation_messages(context);
  // ctest runs everything with ATTENDRE_VALIDATION=1: core and synchronization checks.
  const char* level = std::getenv("ATTENDRE_VALIDATION");
  if (level && std::string(level) == "1") CHECK(context.validation() >= Validation::synchronization);
}

ChunkView Stream::chunk(uint32_t first, uint32_t count) const {
  ChunkView c;
  c.rows = count;
  c.q = std::span<const float>(q).subspan(uint64_t{first} * shape.q_row(), uint64_t{count} * shape.q_row());
  c.k = std::span<const float>(k).subspan(uint64_t{first} * shape.kv_row(), uint64_t{count} * shape.kv_row());
  c.v = std::span<const float>(v).subspan(uint64_t{first} * shape.kv_row(), uint64_t{count} * shape.kv_row());
  c.positions = std::span<const int64_t>(positions).subspan(first, count);
  c.valid = std::span<const uint8_t>(valid).subspan(first, count);
  c.tags = std::span<const uint32_t>(tags).subspan(first, count);
  return c;
}

Stream random_stream(const AttentionShape& shape, uint32_t rows, uint64_t seed, const StreamOptions& options) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_int_distribution<int> quarter(-4, 4);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  auto value = [&] { return options.quantized ? static_cast<float>(quarter(rng)) * 0.25f : normal(rng); };
  Stream s;
  s.shape = shape;
  s.rows = rows;
  s.q.resize(uint64_t{rows} * shape.q_row());
  s.k.resize(uint64_t{rows} * shape.kv_row());
  s.v.resize(uint64_t{rows} * shape.kv_row());
  for (float& x : s.q) x = value();
  for (float& x : s.k) x = value();
  for (float& x : s.v) x = value();
  int64_t position = options.first_position;
  std::uniform_int_distribution<uint32_t> gap(1, std::max(1u, options.max_position_gap));
  std::uniform_int_distribution<uint32_t> tag(0, std::max(1u, options.tag_values) - 1);
  for (uint32_t r = 0; r < rows; ++r) {
    s.positions.push_back(position);
    position += gap(rng);
    s.valid.push_back(unit(rng) < options.invalid_fraction ? 0 : 1);
    s.tags.push_back(options.tag_values ? tag(rng) : 0u);
  }
  return s;
}

std::vector<StepRecord> run_stream(AttendreLayer& layer, const Stream& stream, bool flush) {
  const uint32_t S = layer.config().chunk;
  StepRequest request;
  request.snapshot = true;
  std::vector<StepRecord> records;
  auto keep = [&](StepResult r) {
    records.push_back({std::move(r.emitted_positions), std::move(r.outputs), std::move(r.snapshot)});
  };
  for (uint32_t first = 0; first < stream.rows; first += S)
    keep(layer.step(stream.chunk(first, std::min(S, stream.rows - first)), request).value_or_throw());
  if (flush) {
    if (layer.has_pending_queries()) keep(layer.flush(request).value_or_throw());
  } else {
    while (layer.has_pending_queries()) keep(layer.drain_step(request).value_or_throw());
  }
  return records;
}

namespace {

bool close(double expected, double actual, double tolerance) {
  return std::abs(expected - actual) <= tolerance * std::max(1.0, std::abs(expected));
}

}  // namespace

void check_runs_match(const std::vector<StepRecord>& expected, const std::vector<StepRecord>& actual,
                      double score_tolerance, double output_tolerance, const std::string& label) {
  INFO(label);
  REQUIRE(expected.size() == actual.size());
  for (size_t t = 0; t < expected.size(); ++t) {
    INFO("step " << t);
    REQUIRE(expected[t].emitted == actual[t].emitted);
    REQUIRE(expected[t].snapshot.positions == actual[t].snapshot.positions);
    const auto& es = expected[t].snapshot.scores;
    const auto& as = actual[t].snapshot.scores;
    for (size_t i = 0; i < es.size(); ++i) {
      if (!close(es[i], as[i], score_tolerance))
        FAIL("score of position " << expected[t].snapshot.positions[i] << ": expected " << es[i] << ", got " << as[i]);
    }
    REQUIRE(expected[t].outputs.size() == actual[t].outputs.size());
    for (size_t i = 0; i < expected[t].outputs.size(); ++i)
      if (!close(expected[t].outputs[i], actual[t].outputs[i], output_tolerance))
        FAIL("output " << i << ": expected " << expected[t].outputs[i] << ", got " << actual[t].outputs[i]);
  }
}

TempDir::TempDir() {
  static std::atomic<int> counter{0};
  const auto stamp = std::chrono::steady_clock::now().time_since_epoch().count();
  path = std::filesystem::temp_directory_path() /
         ("attendre-test-" + std::to_string(stamp) + "-" + std::to_string(counter.fetch_add(1)));
  std::filesystem::create_directories(path);
}

TempDir::~TempDir() {
  std::error_code ignored;  // a leftover temp folder must not fail a test
  std::filesystem::remove_all(path, ignored);
}

std::string slurp(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

ToolOutcome run_tool(const std::string& binary, const std::string& arguments) {
  const std::string command = "'" + binary + "' " + arguments + " 2>&1";
  ToolOutcome outcome;
  FILE* pipe = popen(command.c_str(), "r");
  REQUIRE(pipe != nullptr);
  std::array<char, 4096> buffer{};
  size_t got = 0;
  while ((got = std::fread(buffer.data(), 1, buffer.size(), pipe)) > 0) outcome.output.append(buffer.data(), got);
  const int status = pclose(pipe);
  outcome.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return outcome;
}

ToolStreams run_tool_streams(const std::string& binary, const std::string& arguments, const std::string& shell_prefix) {
  const TempDir capture;
  const std::string out = capture / "stdout.txt", err = capture / "stderr.txt";
  const std::string command = shell_prefix + "'" + binary + "' " + arguments + " >'" + out + "' 2>'" + err + "'";
  const int status = std::system(command.c_str());
  ToolStreams streams;
  if (status != -1 && WIFEXITED(status)) streams.code = WEXITSTATUS(status);
  streams.out = slurp(out);
  streams.err = slurp(err);
  return streams;
}

}  // namespace attendre::test
