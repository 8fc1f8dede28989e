// The watchdog bound (DeviceCaps::max_groups_per_dispatch): a grid of more
// workgroups is recorded as pieces (vkCmdDispatchBase) that cover it exactly
// once, with no barrier between the pieces of one dispatch, and retrieval,
// insertion/eviction and a stack step give the float64 reference's answers
// and the uncut run's bits with 1 and 3 workgroups per dispatch.
#include "kernel_harness.hpp"
#include "stack_support.hpp"
#include "support.hpp"

#include "kernels/add.hpp"
#include "kernels/kernel_plan.hpp"
#include "vulkan/buffer.hpp"
#include "vulkan/commands.hpp"

#include <attendre/diagnostics.hpp>
#include <attendre/error.hpp>
#include <attendre/gpu.hpp>
#include <attendre/gpu_stack.hpp>
#include <attendre/reference/layer.hpp>
#include <attendre/reference/stack.hpp>

#include <doctest/doctest.h>

#include <cstdlib>
#include <random>
#include <memory>
#include <sstream>

namespace attendre {
namespace {

constexpr uint32_t kUnlimited = 0xFFFFFFFFu;

std::unique_ptr<Context> tiny_context(uint32_t groups) {
  ContextOptions options;
  options.limits = LimitOverrides{32u, 1536u, std::nullopt};
  options.limits->max_groups_per_dispatch = groups;
  return Context::create(options).value_or_throw();
}

// 32 invocations and 64-entry select tiles (as test::tiny_gpu()), so small
// sizes cross workgroup and tile boundaries, with at most `groups` (1, 3 or
// kUnlimited: never cut) workgroups per dispatch. Created together and
// initialized in one statement, so that they are destroyed at exit before
// the driver's own statics, which their creation set up.
Context& tiny_gpu_cut(uint32_t groups) {
  static const std::unique_ptr<Context> contexts[] = {tiny_context(kUnlimited), tiny_context(1), tiny_context(3)};
  REQUIRE((groups == kUnlimited || groups == 1 || groups == 3));
  return *contexts[groups == kUnlimited ? 0 : groups == 1 ? 1 : 2];
}

TEST_CASE("watchdog: pieces of a grid cover every workgroup once, none larger than the bound") {
  const vk::DispatchGrid grids[] = {{1, 1, 1}, {7, 1, 1}, {5, 3, 2}, {4, 4, 4}, {100, 3, 1}, {3, 100, 2}, {1, 1, 9}};
  for (const vk::DispatchGrid& grid : grids)
    for (uint32_t bound : {1u, 3u, 4u, 7u, 16u, 1000u}) {
      INFO("grid " << grid.x << " x " << grid.y << " x " << grid.z << ", bound " << bound);
      std::vector<int> covered(size_t{grid.x} * grid.y * grid.z, 0);
      uint32_t pieces = 0;
      vk::for_each_piece(grid, bound, [&](const vk::DispatchGrid& base, const vk::DispatchGrid& count) {
        ++pieces;
        CHECK(uint64_t{count.x} * count.y * count.z <= bound);
        CHECK(count.x * count.y * count.z > 0);
        for (uint32_t z = base.z; z < base.z + count.z; ++z)
          for (uint32_t y = base.y; y < base.y + count.y; ++y)
            for (uint32_t x = base.x; x < base.x + count.x; ++x) {
              REQUIRE((x < grid.x && y < grid.y && z < grid.z));
              ++covered[(size_t{z} * grid.y + y) * grid.x + x];
            }
      });
      for (int c : covered) CHECK(c == 1);
      if (covered.size() <= bound) CHECK(pieces == 1);
    }
}

TEST_CASE("watchdog: the recorder puts no barrier between the pieces of a dispatch, one between dispatches") {
  // add(A, B) -> C, then add(C, B) -> D on 10 rows of 70 floats: with 32
  // invocations, 30 logical groups; the second plan folds them into grids
  // 3 wide and 2 high, so the kernels loop (rows.glsl) within each piece.
  Context& context = tiny_gpu_cut(3);
  REQUIRE(context.caps().max_groups_per_dispatch == 3);
  kernels::KernelPlan folded = kernels::plan_kernels(context.caps());
  folded.max_groups_x = 3;
  folded.max_groups_y = 2;
  for (const kernels::KernelPlan& plan : {kernels::plan_kernels(context.caps()), folded}) {
    INFO("fold " << plan.max_groups_x << " x " << plan.max_groups_y);
    const uint32_t rows = 10, cols = 70, n = rows * cols;
    std::mt19937 random(11);
    std::uniform_real_distribution<float> uniform(-2.0f, 2.0f);
    std::vector<float> a(n), b(n);
    std::vector<uint32_t> a_bits(n), b_bits(n);
    for (uint32_t i = 0; i < n; ++i) {
      a[i] = uniform(random), b[i] = uniform(random);
      a_bits[i] = test::float_bits(a[i]), b_bits[i] = test::float_bits(b[i]);
    }
    const vk::Buffer A = test::upload_words(context, a_bits, "test a"), B = test::upload_words(context, b_bits, "test b");
    const vk::Buffer C = test::device_words(context, n, 0u, "test c"), D = test::device_words(context, n, 0u, "test d");
    vk::DescriptorArena arena(context);
    const kernels::Add first = kernels::Add::create(context, arena, plan, {&A}, {&B}, {&C}).value_or_throw();
    const kernels::Add second = kernels::Add::create(context, arena, plan, {&C}, {&B}, {&D}).value_or_throw();
    const kernels::RowRef ref = kernels::RowRef::contiguous(cols);
    const kernels::Grid grid = kernels::fold_groups(uint64_t{rows} * kernels::ceil_div(cols, plan.workgroup), plan);
    const uint32_t pieces_each = kernels::ceil_div(uint64_t{grid.x} * grid.y, 3);
    REQUIRE(pieces_each > 1);

    vk::Submission submission = vk::Submission::create(context).value_or_throw();
    vk::CommandRecorder& rec = *submission.begin().value_or_throw();
    const vk::CommandRecorder::Counts start = rec.counts();
    first.record(rec, {rows, cols, ref, ref, ref}).or_throw();
    CHECK(rec.counts().dispatches == start.dispatches + 1);
    CHECK(rec.counts().pieces == start.pieces + pieces_each);
    CHECK(rec.counts().barriers == start.barriers);  // none between its pieces
    second.record(rec, {rows, cols, ref, ref, ref}).or_throw();
    CHECK(rec.counts().pieces == start.pieces + 2 * pieces_each);
    CHECK(rec.counts().barriers == start.barriers + 1);  // the second reads what the first wrote
    submission.submit().or_throw();
    submission.wait().or_throw();
    const std::vector<uint32_t> d_bits = test::download_words(context, D, 0, n);
    for (uint32_t i = 0; i < n; ++i) {
      const float d = test::bits_float(d_bits[i]), expected = (a[i] + b[i]) + b[i];
      if (d != expected) FAIL_CHECK("D[" << i << "] = " << d << ", expected " << expected);
    }
    test::check_no_validation_messages(context);
  }
}

std::string describe(const LayerConfig& k, uint32_t groups) {
  std::ostringstream s;
  s << to_string(k.kv.policy.kind) << " M=" << k.kv.capacity << " K=" << k.retrieval.top_k
    << " S=" << k.chunk << " N=" << k.q_capacity << ", " << groups << " workgroups per dispatch";
  return s.str();
}

// Runs a stream through the reference and through layers on cut and uncut
// contexts: the cut runs match the reference to fp32 tolerance and the uncut
// run bit for bit (every output, score and retained position).
void check_layer_cut(const LayerConfig& config, uint32_t rows, uint64_t seed, std::initializer_list<uint32_t> bounds) {
  test::StreamOptions options;
  options.invalid_fraction = 0.05;
  const test::Stream stream = test::random_stream(config.shape, rows, seed, options);
  reference::Layer cpu(config);
  const auto expected = test::run_stream(cpu, stream);
  auto uncut_owner = gpu::Layer::create(tiny_gpu_cut(kUnlimited), config).value_or_throw();
  gpu::Layer& uncut = *uncut_owner;
  const auto whole = test::run_stream(uncut, stream);
  for (uint32_t groups : bounds) {
    const std::string label = describe(config, groups);
    INFO(label);
    Context& context = tiny_gpu_cut(groups);
    auto device_owner = gpu::Layer::create(context, config).value_or_throw();
    gpu::Layer& device = *device_owner;
    const auto cut = test::run_stream(device, stream);
    test::check_runs_match(expected, cut, 2e-4, 2e-4, label);
    REQUIRE(cut.size() == whole.size());
    for (size_t step = 0; step < cut.size(); ++step) {
      INFO("step " << step);
      CHECK(cut[step].emitted == whole[step].emitted);
      CHECK(cut[step].outputs == whole[step].outputs);
      CHECK(cut[step].snapshot.positions == whole[step].snapshot.positions);
      CHECK(cut[step].snapshot.scores == whole[step].snapshot.scores);
    }
    test::check_no_validation_messages(context);
  }
  test::check_no_validation_messages(tiny_gpu_cut(kUnlimited));
}

TEST_CASE("watchdog: retrieval, insertion and eviction cut into 1 and 3 workgroups per dispatch") {
  // M = 150 spans three 64-entry select tiles (the merge runs), D = 40 three
  // of score's 16-wide slices; S = 16 and N = 21 cross the 32-invocation groups.
  LayerConfig c;
  c.shape = {4, 2, 40};
  c.chunk = 16;
  c.q_capacity = 21;
  c.kv.capacity = 150;
  c.kv.n_sink = 2;
  c.kv.policy = Policy{PolicyKind::lru, 0.0, {}};
  c.retrieval.top_k = 19;
  check_layer_cut(c, 200, 31, {1u, 3u});
}

TEST_CASE("watchdog: score_stats over several workgroups, cut into 3 per dispatch") {
  // 512 slots per score_stats workgroup (32 invocations): M = 1100 takes
  // three and the combining pass; lra_sum's initial scores decide evictions.
  LayerConfig c;
  c.shape = {4, 2, 8};
  c.chunk = 16;
  c.q_capacity = 0;
  c.kv.capacity = 1100;
  c.kv.n_sink = 3;
  c.kv.policy = Policy::lra_sum();
  c.retrieval.top_k = 8;
  check_layer_cut(c, 1200, 32, {3u});
}

TEST_CASE("watchdog: a stack step cut into 1 and 3 workgroups per dispatch matches the reference and the uncut run") {
  // Two blocks of 24-wide rows, chunk 6: embeddings, norms, matmuls, RoPE,
  // activations and residual adds (the folded kernels) beside retrieval.
  const test::TokenStream s = test::random_tokens(40, 37, 33, 0.05);
  StackConfig config = test::small_stack(2, {4, 2, 8}, 6, 7, 14, 5, Policy::lra_sum());
  RandomWeights weights(43);
  reference::Stack cpu(config, weights);
  auto uncut_owner = gpu::Stack::create(tiny_gpu_cut(kUnlimited), config, weights).value_or_throw();
  gpu::Stack& uncut = *uncut_owner;
  std::vector<std::unique_ptr<gpu::Stack>> cut;
  for (uint32_t groups : {1u, 3u}) cut.push_back(gpu::Stack::create(tiny_gpu_cut(groups), config, weights).value_or_throw());
  StackRequest request;
  request.logits = true;
  for (uint32_t first = 0, step = 0; first < s.rows(); first += config.chunk, ++step) {
    INFO("step " << step);
    const StackChunk chunk = s.chunk(first, std::min(config.chunk, s.rows() - first));
    const StackOutput expected = cpu.step(chunk, request).value_or_throw();
    const StackOutput whole = uncut.step(chunk, request).value_or_throw();
    REQUIRE(expected.positions == whole.positions);
    for (size_t i = 0; i < expected.hidden.size(); ++i)
      CHECK(whole.hidden[i] == doctest::Approx(expected.hidden[i]).epsilon(1e-3).scale(1.0));
    for (size_t i = 0; i < expected.logits.size(); ++i)
      CHECK(whole.logits[i] == doctest::Approx(expected.logits[i]).epsilon(1e-3).scale(1.0));
    for (size_t k = 0; k < cut.size(); ++k) {
      INFO((k == 0 ? 1 : 3) << " workgroups per dispatch");
      const StackOutput a = cut[k]->step(chunk, request).value_or_throw();
      CHECK(a.positions == whole.positions);
      CHECK(a.hidden == whole.hidden);
      CHECK(a.logits == whole.logits);
      for (size_t l = 0; l < config.blocks.size(); ++l) CHECK(cut[k]->snapshot(l).value_or_throw().positions == cpu.snapshot(l).value_or_throw().positions);
    }
  }
  for (uint32_t groups : {kUnlimited, 1u, 3u}) test::check_no_validation_messages(tiny_gpu_cut(groups));
}

TEST_CASE("watchdog: a bound of 0 workgroups per dispatch is refused, and the environment sets it") {
  ContextOptions options;
  options.limits = LimitOverrides{};
  options.limits->max_groups_per_dispatch = 0u;
  try {
    auto context_owner = Context::create(options).value_or_throw();
    [[maybe_unused]] Context& context = *context_owner;
    FAIL("a bound of 0 was accepted");
  } catch (const Error& e) {
    CHECK(e.code() == ErrorCode::invalid_argument);
    CHECK(std::string(e.what()).find("max_groups_per_dispatch") != std::string::npos);
  }
  CHECK(LimitOverrides::portable().max_groups_per_dispatch.value_or(0) > 0);

  // Read where the options leave the limits unset; a bad count is an error.
  const char* saved = std::getenv("ATTENDRE_MAX_GROUPS_PER_DISPATCH");
  const std::string previous = saved ? saved : "";
  ::setenv("ATTENDRE_MAX_GROUPS_PER_DISPATCH", "5", 1);
  {
    auto context_owner = Context::create().value_or_throw();
    Context& context = *context_owner;
    CHECK(context.caps().max_groups_per_dispatch == 5);
  }
  ::setenv("ATTENDRE_MAX_GROUPS_PER_DISPATCH", "5x", 1);
  try {
    auto context_owner = Context::create().value_or_throw();
    [[maybe_unused]] Context& context = *context_owner;
    FAIL("ATTENDRE_MAX_GROUPS_PER_DISPATCH=5x was accepted");
  } catch (const Error& e) {
    CHECK(e.code() == ErrorCode::invalid_argument);
    CHECK(std::string(e.what()).find("ATTENDRE_MAX_GROUPS_PER_DISPATCH") != std::string::npos);
  }
  if (saved)
    ::setenv("ATTENDRE_MAX_GROUPS_PER_DISPATCH", previous.c_str(), 1);
  else
    ::unsetenv("ATTENDRE_MAX_GROUPS_PER_DISPATCH");
}

}  // namespace
}  // namespace attendre
