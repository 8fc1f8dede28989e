#include "reading.hpp"

#include <attendre/gpu_stack.hpp>
#include <attendre/reference/stack.hpp>

#include <algorithm>
#include <chrono>
#include <memory>

namespace reader {
namespace {

std::unique_ptr<attendre::TransformerStack> make_stack(attendre::Context* device, const attendre::StackConfig& config,
                                                       attendre::WeightSource& weights) {
  if (device) return attendre::gpu::Stack::create(*device, config, weights).value_or_throw();
  return std::make_unique<attendre::reference::Stack>(config, weights);
}

// Steps, samples and the yardstick's bookkeeping of one read.
class Read {
 public:
  Read(const ReadSetup& setup, const attendre::StackConfig& config, RunResult& result)
      : setup_(setup), result_(result), stack_(make_stack(setup.device, config, setup.backend.weights())),
        window_(config.blocks[0].attention.shape) {
    result_.map = RetentionMap(setup.schedule.tokens);
    for (const attendre::BlockConfig& b : config.blocks) capacity_.push_back(b.attention.kv.capacity);
    held_.assign(config.blocks.size(), 0);
    if (auto* gpu = dynamic_cast<attendre::gpu::Stack*>(stack_.get())) {
      const attendre::gpu::StackMemory memory = gpu->memory();
      result_.device_bytes = memory.total();
      for (const attendre::gpu::BlockMemory& b : memory.blocks) result_.block_device_bytes.push_back(b.total());
    }
  }

  // A full chunk steps when the next token comes, so that the last step
  // is known as such (it asks for the logits an answer starts from).
  void token(const TokenView& t) {
    if (inputs_.rows() == setup_.schedule.chunk) step(false);
    setup_.backend.append_input(t.token, t.position, inputs_);
    if (setup_.yardstick) window_.add(setup_.backend, t.token, t.position);
  }

  void finish() {
    if (inputs_.rows() > 0) step(true);
    keep_last_logits(stack_->finish(final_request(), stack_->config().flush_capable).value_or_throw());
    for (size_t l = 0; l < capacity_.size(); ++l) {
      attendre::MemorySnapshot held = stack_->snapshot(l).value_or_throw();
      if (l + 1 == capacity_.size()) result_.map.add_row(step_, setup_.schedule.tokens - 1, held, true);
      result_.blocks.push_back({capacity_[l], std::move(held.positions), std::move(held.scores)});
    }
    result_.steps = step_;
    if (mass_queries_ > 0) result_.mass = MassEstimate{mass_sum_ / static_cast<double>(mass_queries_), mass_queries_};
  }

  std::optional<std::string> answer() {
    if (last_logits_.empty()) return std::nullopt;  // no vocabulary
    return setup_.backend.answer(*stack_, last_logits_, setup_.schedule.tokens);
  }

 private:
  // Steps return without waiting for the device; only snapshots wait. The
  // last position leaves the stack in the last step (N = 0) or while
  // finishing: those ask for logits where there is a vocabulary.
  static constexpr attendre::StackRequest kNoReadback{false, false};
  attendre::StackRequest final_request() const { return {false, stack_->config().vocab > 0}; }

  void keep_last_logits(const attendre::StackOutput& out) {
    const size_t vocab = stack_->config().vocab;
    if (out.logits.empty() || out.positions.back() != setup_.schedule.tokens - 1) return;
    last_logits_.assign(out.logits.end() - static_cast<std::ptrdiff_t>(vocab), out.logits.end());
  }

  void step(bool last) {
    keep_last_logits(stack_->step(inputs_.chunk(), last ? final_request() : kNoReadback).value_or_throw());
    inputs_.clear();
    const uint64_t step = step_++;
    const int64_t horizon = setup_.schedule.horizon(step);
    if (setup_.schedule.sampled(step)) sample(step, horizon);
    setup_.progress.update(horizon + 1, held_, capacity_);
  }

  void sample(uint64_t step, int64_t horizon) {
    for (size_t l = 0; l < capacity_.size(); ++l) {
      const attendre::MemorySnapshot held = stack_->snapshot(l).value_or_throw();
      held_[l] = static_cast<uint32_t>(held.positions.size());
      if (l == 0 && setup_.yardstick) measure(step, held.positions);
      if (l + 1 == capacity_.size()) result_.map.add_row(step, horizon, held, false);
    }
  }

  // Block 0 held `held` during this step's retrieval: the queries it
  // retrieved with are weighed against full attention.
  void measure(uint64_t step, const std::vector<int64_t>& held) {
    const auto key = [this](int64_t p) { return window_.key(p); };
    for (int64_t query : setup_.yardstick->queries_at(step)) {
      mass_sum_ += setup_.yardstick->mass(query, held, key);
      ++mass_queries_;
    }
    window_.keep_only(held);
  }

  const ReadSetup& setup_;
  RunResult& result_;
  std::unique_ptr<attendre::TransformerStack> stack_;
  StackInputs inputs_;
  KeyWindow window_;
  std::vector<uint32_t> capacity_, held_;
  std::vector<float> last_logits_;
  uint64_t step_ = 0;
  double mass_sum_ = 0.0;
  uint64_t mass_queries_ = 0;
};

}  // namespace

RunResult read_document(const ReadSetup& setup, const attendre::StackConfig& config, const PolicyList& policies,
                        size_t run) {
  RunResult result;
  result.policies = policies;
  result.label = label(policies);
  result.config = config;
  Read read(setup, config, result);  // builds the stack: weights and pipelines, outside the clock
  std::unique_ptr<TokenStream> tokenizer = setup.backend.make_token_stream();
  setup.progress.begin(result.label, run, setup.runs, setup.schedule.tokens);
  const auto start = std::chrono::steady_clock::now();
  setup.document.walk(*tokenizer, [&](const TokenView& t) { read.token(t); });
  read.finish();
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  setup.progress.end(result.seconds);
  result.answer = read.answer();  // generation has a clock of its own
  return result;
}

bool BlockRetention::holds(int64_t position) const {
  return std::binary_search(positions.begin(), positions.end(), position);
}

uint32_t BlockRetention::held_in(int64_t first, int64_t last) const {
  const auto lo = std::lower_bound(positions.begin(), positions.end(), first);
  const auto hi = std::upper_bound(positions.begin(), positions.end(), last);
  return static_cast<uint32_t>(hi - lo);
}

}  // namespace reader
