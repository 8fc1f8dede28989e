// Resources of the device stack: what it holds is what plan_stack_memory()
// predicts, and streaming 100,000 positions neither grows host nor device
// memory nor lets the outputs drift to non-finite values.
#include "stack_support.hpp"
#include "support.hpp"

#include <attendre/gpu_stack.hpp>

#include <doctest/doctest.h>

#include <cmath>
#include <fstream>
#include <string>

using namespace attendre;

namespace {

// Resident set of this process in KiB (lavapipe's device memory is host
// memory, so this covers both).
uint64_t resident_kib() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line))
    if (line.rfind("VmRSS:", 0) == 0) return std::stoull(line.substr(6));
  return 0;
}

void check_memory_equals_plan(const StackConfig& c) {
  RandomWeights weights(3);
  gpu::Stack stack(test::gpu(), c, weights);
  const gpu::StackMemory held = stack.memory(), planned = gpu::plan_stack_memory(c, test::gpu().caps());
  REQUIRE(held.blocks.size() == planned.blocks.size());
  for (size_t l = 0; l < held.blocks.size(); ++l) {
    INFO("block " << l);
    CHECK(held.blocks[l].weights == planned.blocks[l].weights);
    CHECK(held.blocks[l].q_memory == planned.blocks[l].q_memory);
    CHECK(held.blocks[l].kv_memory == planned.blocks[l].kv_memory);
  }
  CHECK(held.model == planned.model);
  CHECK(held.scratch == planned.scratch);
  CHECK(held.activations == planned.activations);
  CHECK(held.staging == planned.staging);
  CHECK(held.total() == planned.total());
}

}  // namespace

TEST_CASE("stack memory: what the stack holds is what plan_stack_memory predicts") {
  StackConfig a = test::small_stack(3, {4, 2, 8}, 6, 7, 20, 5, Policy::lra_sum());
  a.blocks[1].attention.kv.capacity = 33;
  a.blocks[2].ffn = 64;
  check_memory_equals_plan(a);
  StackConfig b = test::small_stack(2, {2, 2, 8}, 4, 9, 30, 30, Policy::lfu());
  b.flush_capable = true;
  b.tied_embeddings = true;
  b.blocks[0].qkv_bias = b.blocks[1].ffn_bias = true;
  b.blocks[1].norm = NormKind::layer;
  check_memory_equals_plan(b);
  test::check_no_validation_messages(test::gpu());
}

TEST_CASE("stack soak: 100,000 positions keep host and device memory flat and outputs finite") {
  StackConfig c = test::small_stack(2, {1, 1, 8}, 64, 32, 64, 8, Policy::lra_sum());
  c.hidden = 16;
  c.blocks[1].attention.kv.policy = Policy::lfa(1e-3);
  RandomWeights weights(9);
  gpu::Stack stack(test::gpu(), c, weights);
  const gpu::StackMemory before = stack.memory();

  const uint64_t total = 100000;
  std::vector<uint32_t> tokens(c.chunk);
  std::vector<int64_t> positions(c.chunk);
  uint64_t emitted = 0, checked = 0, warm_kib = 0;
  StackRequest quiet;
  quiet.hidden = false;
  for (uint64_t first = 0, step = 0; first < total; first += c.chunk, ++step) {
    const uint32_t rows = static_cast<uint32_t>(std::min<uint64_t>(c.chunk, total - first));
    for (uint32_t r = 0; r < rows; ++r) {
      tokens[r] = static_cast<uint32_t>((first + r) * 2654435761u % c.vocab);
      positions[r] = static_cast<int64_t>(first + r);
    }
    StackChunk chunk;
    chunk.rows = rows;
    chunk.tokens = {tokens.data(), rows};
    chunk.positions = {positions.data(), rows};
    // Read back one step in a hundred; the others stay on the device.
    const bool look = step % 100 == 0;
    const StackOutput o = stack.step(chunk, look ? StackRequest{} : quiet);
    emitted += o.positions.size();
    if (look) {
      for (float x : o.hidden) {
        CHECK(std::isfinite(x));
        ++checked;
      }
    }
    if (step == 150) warm_kib = resident_kib();
  }
  emitted += stack.finish().positions.size();
  CHECK(emitted == total);
  CHECK(checked > 0);
  const uint64_t end_kib = resident_kib();
  MESSAGE("resident " << warm_kib << " KiB after warm-up, " << end_kib << " KiB after " << total << " positions");
  CHECK(end_kib <= warm_kib + 8 * 1024);  // flat: no per-step growth beyond allocator noise
  CHECK(stack.memory().total() == before.total());
  test::check_no_validation_messages(test::gpu());
}
