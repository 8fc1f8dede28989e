// The GPU layer against the float64 reference on randomized streams.
#include "support.hpp"

#include <attendre/gpu.hpp>
#include <attendre/reference.hpp>

#include <doctest/doctest.h>

using namespace attendre;

TEST_CASE("gpu layer matches reference: smoke") {
  LayerConfig config;
  config.shape = {4, 2, 16};
  config.chunk = 4;
  config.q_capacity = 6;
  config.kv.capacity = 12;
  config.kv.policy = Policy::lra_sum();
  config.retrieval.top_k = 5;
  const test::Stream stream = test::random_stream(config.shape, 41, 7);
  reference::Layer cpu(config);
  gpu::Layer device(test::gpu(), config);
  const auto expected = test::run_stream(cpu, stream);
  const auto actual = test::run_stream(device, stream);
  test::check_runs_match(expected, actual, 1e-4, 1e-4, "smoke");
  test::check_no_validation_messages(test::gpu());
}
