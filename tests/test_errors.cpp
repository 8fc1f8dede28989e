// Error paths of the library: infeasible or invalid configurations and bad
// chunks are rejected with a message naming the problem, by both backends,
// and a rejected chunk leaves the layer usable.
#include "support.hpp"

#include <attendre/error.hpp>
#include <attendre/gpu.hpp>
#include <attendre/reference/layer.hpp>

#include <doctest/doctest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <memory>

using namespace attendre;

namespace {

LayerConfig base_config() {
  LayerConfig c;
  c.shape = {4, 2, 8};
  c.chunk = 4;
  c.q_capacity = 3;
  c.kv.capacity = 10;
  c.kv.policy = Policy::lra_sum();
  c.retrieval.top_k = 3;
  return c;
}

// Runs `body` and checks it throws attendre::Error with `code` and a message containing `phrase`.
void check_error(const std::function<void()>& body, ErrorCode code, const std::string& phrase) {
  try {
    body();
    FAIL("expected an error containing '" << phrase << "'");
  } catch (const Error& e) {
    CHECK(e.code() == code);
    CHECK_MESSAGE(std::string(e.what()).find(phrase) != std::string::npos, e.what());
    CHECK(std::string(e.what()).find('\n') == std::string::npos);
  }
}

void both_backends(const std::function<void(const std::function<std::unique_ptr<AttendreLayer>(const LayerConfig&)>&)>& body) {
  body([](const LayerConfig& c) { return std::make_unique<reference::Layer>(c); });
  body([](const LayerConfig& c) { return gpu::Layer::create(test::gpu(), c).value_or_throw(); });
}

}  // namespace

TEST_CASE("infeasible and invalid configurations are rejected at creation") {
  both_backends([](auto make) {
    auto with = [&](auto edit) {
      LayerConfig c = base_config();
      edit(c);
      return [&make, c] { make(c); };
    };
    check_error(with([](LayerConfig& c) { c.kv.capacity = 5, c.kv.n_sink = 2; }), ErrorCode::infeasible_config,
                "protect_new needs M >= S + n_sink");
    check_error(with([](LayerConfig& c) { c.kv.protect_new = false, c.kv.capacity = 3, c.kv.n_sink = 4; }),
                ErrorCode::infeasible_config, "cannot hold n_sink=4");
    check_error(with([](LayerConfig& c) { c.shape.heads_q = 3; }), ErrorCode::invalid_argument,
                "must be a multiple of heads_kv");
    check_error(with([](LayerConfig& c) { c.chunk = 0; }), ErrorCode::invalid_argument, "chunk size");
    check_error(with([](LayerConfig& c) { c.retrieval.top_k = 0; }), ErrorCode::invalid_argument, "top-K");
    check_error(with([](LayerConfig& c) { c.kv.policy = Policy::lfa(-0.5); }), ErrorCode::invalid_argument,
                "lambda");
    check_error(with([](LayerConfig& c) { c.kv.policy.initial.k = std::nan(""); }), ErrorCode::invalid_argument,
                "initial score k");
    check_error(with([](LayerConfig& c) { c.retrieval.scale = std::numeric_limits<double>::infinity(); }),
                ErrorCode::invalid_argument, "scale");
  });
}

TEST_CASE("device limits are reported, not clamped") {
  auto with = [](auto edit) {
    LayerConfig c = base_config();
    edit(c);
    return [c] { (void)gpu::Layer::create(test::tiny_gpu(), c).value_or_throw(); };
  };
  // tiny_gpu() sorts 64-entry tiles, so K and S may not exceed 32.
  check_error(with([](LayerConfig& c) { c.kv.capacity = 200, c.retrieval.top_k = 33; }), ErrorCode::unsupported,
              "top_k K=33 exceeds this device's limit of 32");
  check_error(with([](LayerConfig& c) { c.kv.capacity = 200, c.chunk = 40; }), ErrorCode::unsupported,
              "chunk size S=40 exceeds");
  check_error(with([](LayerConfig& c) { c.shape.head_dim = 1000; }), ErrorCode::unsupported, "head_dim 1000");
  // A driver that cuts loops off (lavapipe) must refuse what would be cut.
  if (test::gpu().caps().max_loop_iterations > 0) {
    check_error([] {
      LayerConfig c = base_config();
      c.kv.capacity = 40000;
      c.retrieval.top_k = 40000;
      auto layer_owner = gpu::Layer::create(test::gpu(), c).value_or_throw();
      [[maybe_unused]] gpu::Layer& layer = *layer_owner;
    }, ErrorCode::unsupported, "loop limit");
  }
  // K >= M is full attention and needs no selection, whatever the tile.
  auto full_owner = gpu::Layer::create(test::tiny_gpu(), [] {
    LayerConfig c = base_config();
    c.kv.capacity = 200;
    c.retrieval.top_k = 200;
    return c;
  }()).value_or_throw();
  [[maybe_unused]] gpu::Layer& full = *full_owner;
  test::check_no_validation_messages(test::tiny_gpu());
}

TEST_CASE("bad chunks are rejected and leave the layer usable") {
  const test::Stream s = test::random_stream({4, 2, 8}, 12, 3);
  both_backends([&](auto make) {
    auto layer = make(base_config());
    layer->step(s.chunk(0, 4)).value_or_throw();
    ChunkView c = s.chunk(4, 4);

    std::vector<int64_t> backwards(c.positions.begin(), c.positions.end());
    backwards[2] = backwards[1];
    ChunkView bad = c;
    bad.positions = backwards;
    check_error([&] { layer->step(bad).value_or_throw(); }, ErrorCode::invalid_argument, "positions must strictly increase");

    std::vector<float> poisoned(c.k.begin(), c.k.end());
    poisoned[5] = std::nanf("");
    bad = c;
    bad.k = poisoned;
    check_error([&] { layer->step(bad).value_or_throw(); }, ErrorCode::invalid_argument, "chunk k row 0 holds a non-finite value");

    bad = c;
    bad.v = bad.v.subspan(1);
    check_error([&] { layer->step(bad).value_or_throw(); }, ErrorCode::invalid_argument, "chunk v holds");

    bad = s.chunk(4, 8);
    bad.rows = 8;
    check_error([&] { layer->step(bad).value_or_throw(); }, ErrorCode::invalid_argument, "more than the layer's S=4");

    StepRequest evicted;
    evicted.evicted = true;
    check_error([&] { layer->step(c, evicted).value_or_throw(); }, ErrorCode::invalid_argument, "copy_out_evicted is off");

    // The rejected chunks changed nothing: the stream continues where it was.
    const StepResult r = layer->step(c).value_or_throw();
    CHECK(r.emitted_positions.size() == 4);
    CHECK(layer->snapshot().value_or_throw().positions.size() == 8);
  });
  test::check_no_validation_messages(test::gpu());
}

TEST_CASE("an insertion that would evict a pinned entry fails at run time, changing nothing") {
  // Negative positions are all below n_sink: every entry is pinned, so the
  // memory fills and the next insertion cannot evict anything.
  test::StreamOptions options;
  options.first_position = -100;
  const test::Stream s = test::random_stream({2, 1, 8}, 12, 4, options);
  both_backends([&](auto make) {
    LayerConfig c = base_config();
    c.shape = s.shape;
    c.kv.capacity = 9;
    c.kv.n_sink = 4;
    c.q_capacity = 0;
    auto layer = make(c);
    layer->step(s.chunk(0, 4)).value_or_throw();
    layer->step(s.chunk(4, 4)).value_or_throw();
    check_error([&] { layer->step(s.chunk(8, 4)).value_or_throw(); }, ErrorCode::infeasible_config, "must evict 3 entries but only 0");
    CHECK(layer->snapshot().value_or_throw().positions.size() == 8);
    CHECK_FALSE(layer->has_pending_queries());
  });
  test::check_no_validation_messages(test::gpu());
}
