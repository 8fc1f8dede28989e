// An application's first use of attendre: one layer over a short stream on
// whatever Vulkan device there is, through the public headers only.
#include <attendre/context.hpp>
#include <attendre/error.hpp>
#include <attendre/gpu.hpp>

#include <cmath>
#include <cstdio>
#include <vector>

int main() {
  try {
    auto context_owner = attendre::Context::create().value_or_throw();
    attendre::Context& context = *context_owner;
    attendre::LayerConfig config;
    config.shape = {2, 1, 8};
    config.chunk = 4;
    config.q_capacity = 4;
    config.kv.capacity = 8;
    config.kv.policy = attendre::Policy::lra_sum();
    config.retrieval.top_k = 4;
    auto layer_owner = attendre::gpu::Layer::create(context, config).value_or_throw();
    attendre::gpu::Layer& layer = *layer_owner;
    std::vector<float> q(4 * 16), k(4 * 8), v(4 * 8);
    for (size_t i = 0; i < q.size(); ++i) q[i] = std::sin(0.1f * static_cast<float>(i));
    for (size_t i = 0; i < k.size(); ++i) k[i] = std::cos(0.2f * static_cast<float>(i)), v[i] = 0.01f * i;
    size_t outputs = 0;
    for (int step = 0; step < 3; ++step) {
      std::vector<int64_t> positions = {4 * step, 4 * step + 1, 4 * step + 2, 4 * step + 3};
      attendre::ChunkView chunk;
      chunk.rows = 4;
      chunk.q = q;
      chunk.k = k;
      chunk.v = v;
      chunk.positions = positions;
      outputs += layer.step(chunk).value_or_throw().emitted_positions.size();
    }
    std::printf("consumer: %zu positions emitted on %s\n", outputs, context.caps().name.c_str());
    return outputs == 8 ? 0 : 1;
  } catch (const attendre::Error& e) {
    std::fprintf(stderr, "consumer: %s\n", e.what());
    return 1;
  }
}
