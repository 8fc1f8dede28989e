// Shared by the GGUF and quantization tests: a temporary folder, the shared
// real models, error assertions, random data and a small valid model.
#pragma once

#include "gguf/gguf.hpp"
#include "gguf/gguf_writer.hpp"

#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <optional>
#include <random>
#include <string>
#include <vector>

namespace attendre::test {

struct GgufTempDir {
  std::filesystem::path path;
  GgufTempDir() {
    static std::atomic<int> counter{0};
    const auto stamp = std::chrono::steady_clock::now().time_since_epoch().count();
    path = std::filesystem::temp_directory_path() /
           ("attendre-gguf-test-" + std::to_string(stamp) + "-" + std::to_string(counter.fetch_add(1)));
    std::filesystem::create_directories(path);
  }
  ~GgufTempDir() {
    std::error_code ignored;  // a leftover temp folder must not fail a test
    std::filesystem::remove_all(path, ignored);
  }
  GgufTempDir(const GgufTempDir&) = delete;
  GgufTempDir& operator=(const GgufTempDir&) = delete;
};

// ../shared/models when present; tests that need it skip with a message otherwise.
inline std::optional<std::filesystem::path> shared_models() {
  const std::filesystem::path folder = ATTENDRE_SHARED_MODELS;
  if (std::filesystem::is_directory(folder)) return folder;
  MESSAGE("skipped: no shared models folder at " << folder.string());
  return std::nullopt;
}

// The bytes of a file the test needs (fails the test when unreadable).
inline std::string slurp(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  REQUIRE_MESSAGE(in.good(), path.string());
  return {std::istreambuf_iterator<char>(in), {}};
}

// Runs `f`, which must throw attendre::Error with `code` and a one-line
// message containing `needle`.
template <class F>
void check_error(F&& f, ErrorCode code, const std::string& needle) {
  try {
    f();
  } catch (const Error& e) {
    const std::string message = e.what();
    CHECK_MESSAGE(e.code() == code, message);
    CHECK_MESSAGE(message.find(needle) != std::string::npos, "expected \"" << needle << "\" in: " << message);
    CHECK_MESSAGE(message.find('\n') == std::string::npos, message);
    return;
  }
  FAIL("no attendre::Error thrown, expected one containing: " << needle);
}

// `status` failed with `code` and a one-line message containing `needle`.
inline void check_failure(const Status& status, ErrorCode code, const std::string& needle) {
  REQUIRE_MESSAGE(!status.ok(), "no failure, expected one containing: " << needle);
  CHECK_MESSAGE(status.code() == code, status.message());
  CHECK_MESSAGE(status.message().find(needle) != std::string::npos, "expected \"" << needle << "\" in: " << status.message());
  CHECK_MESSAGE(status.message().find('\n') == std::string::npos, status.message());
}
template <class T>
void check_failure(const Result<T>& result, ErrorCode code, const std::string& needle) {
  check_failure(result.status(), code, needle);
}

// Parses `bytes` in memory under the name "x.gguf".
inline gguf::File parse(const std::vector<std::byte>& bytes) { return gguf::File::parse(bytes, "x.gguf").value_or_throw(); }

inline void check_malformed(const std::vector<std::byte>& bytes, const std::string& needle) {
  check_failure(gguf::File::parse(bytes, "x.gguf"), ErrorCode::malformed_input, needle);
}

inline std::vector<float> random_floats(size_t count, uint64_t seed, float scale = 1.0f) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0.0f, scale);
  std::vector<float> out(count);
  for (float& v : out) v = normal(rng);
  return out;
}

inline std::vector<std::byte> random_bytes(size_t count, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<std::byte> out(count);
  for (std::byte& b : out) b = static_cast<std::byte>(rng() & 0xFF);
  return out;
}

inline std::vector<std::byte> f32_bytes(const std::vector<float>& values) {
  const auto bytes = std::as_bytes(std::span(values));
  return {bytes.begin(), bytes.end()};
}

inline void write_file(const std::filesystem::path& path, std::span<const std::byte> bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  REQUIRE(out.good());
}

// A small valid model: a few keys of several types, a vocabulary and three
// tensors (F32, F16, Q8_0), 32-byte aligned.
inline gguf::Writer tiny_model(gguf::WriterOptions options = {}) {
  using gguf::MetadataValue;
  gguf::Writer writer = gguf::Writer::create(options).value_or_throw();
  const std::vector<std::string> tokens = {"<unk>", "<s>", "</s>", "a", "b"};
  const std::vector<float> scores = {0, 0, 0, -1.5f, -2.5f};
  const std::vector<int32_t> types = {2, 3, 3, 1, 1};
  writer.add("general.architecture", MetadataValue::string("llama")).or_throw();
  writer.add("llama.embedding_length", MetadataValue::u32(64)).or_throw();
  writer.add("llama.rope.freq_base", MetadataValue::f32(10000.0f)).or_throw();
  writer.add("tokenizer.ggml.tokens", MetadataValue::strings(tokens)).or_throw();
  writer.add("tokenizer.ggml.scores", MetadataValue::f32s(scores)).or_throw();
  writer.add("tokenizer.ggml.token_type", MetadataValue::i32s(types)).or_throw();
  writer.add("tokenizer.ggml.add_bos_token", MetadataValue::boolean(true)).or_throw();
  writer.add_tensor("norm", {8}, gguf::TensorType::f32, f32_bytes(random_floats(8, 1))).or_throw();
  writer.add_tensor("embed", {4, 3}, gguf::TensorType::f16, random_bytes(4 * 3 * 2, 2)).or_throw();
  writer.add_tensor("proj", {32, 2}, gguf::TensorType::q8_0, random_bytes(2 * 34, 3)).or_throw();
  return writer;
}

}  // namespace attendre::test
