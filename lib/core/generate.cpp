#include "core/fail.hpp"

#include <attendre/generate.hpp>

#include <algorithm>
#include <chrono>
#include <limits>

namespace attendre {
namespace {

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

double rate(uint64_t count, double seconds) { return seconds > 0.0 ? static_cast<double>(count) / seconds : 0.0; }

// Positions are counted in 31 bits on the device (gpu::Stack refuses more).
constexpr uint64_t kMaxPositions = uint64_t{1} << 31;

}  // namespace

double GenerateResult::read_tokens_per_s() const { return rate(prompt_tokens, read_seconds); }

double GenerateResult::generate_tokens_per_s() const {
  return rate(tokens.size() + (stopped ? 1 : 0), generate_seconds);
}

void read_tokens(TransformerStack& stack, std::span<const uint32_t> tokens, LogitsWanted wanted, bool flush,
                 const std::function<void(StackOutput&&)>& on_output) {
  const StackConfig& c = stack.config();
  require(!tokens.empty(), "nothing to read: the token sequence is empty");
  require(c.vocab > 0, "reading tokens needs a stack with a vocabulary");
  require(tokens.size() < kMaxPositions, "a sequence of " + std::to_string(tokens.size()) + " tokens exceeds 2^31 positions");
  std::vector<int64_t> positions(c.chunk);
  StackRequest quiet;
  quiet.hidden = false;
  StackRequest logits = quiet;
  logits.logits = true;
  for (size_t first = 0; first < tokens.size(); first += c.chunk) {
    const auto rows = static_cast<uint32_t>(std::min<size_t>(c.chunk, tokens.size() - first));
    for (uint32_t r = 0; r < rows; ++r) positions[r] = static_cast<int64_t>(first + r);
    StackChunk chunk;
    chunk.rows = rows;
    chunk.tokens = tokens.subspan(first, rows);
    chunk.positions = std::span<const int64_t>(positions).first(rows);
    // The last position leaves the stack in the last input step (N = 0) or
    // while finishing, never before.
    const bool last_step = first + rows == tokens.size();
    on_output(stack.step(chunk, wanted == LogitsWanted::all || last_step ? logits : quiet));
  }
  on_output(stack.finish(logits, flush));
}

GenerateResult generate(TransformerStack& stack, std::span<const uint32_t> prompt, const GenerateOptions& options,
                        const std::function<void(uint32_t)>& on_token) {
  options.sampling.validate();  // before the read, not after it
  const uint32_t vocab = stack.config().vocab;
  require(prompt.size() + options.max_tokens < kMaxPositions,
          "prompt and budget exceed 2^31 positions");
  GenerateResult result;
  result.prompt_tokens = prompt.size();
  std::vector<float> last;  // the logits of the last prompt position
  const auto read_start = std::chrono::steady_clock::now();
  read_tokens(stack, prompt, options.prompt_logits ? LogitsWanted::all : LogitsWanted::last, options.flush,
              [&](StackOutput&& out) {
                if (out.logits.empty()) return;
                if (options.prompt_logits) result.prompt_logits.insert(result.prompt_logits.end(), out.logits.begin(), out.logits.end());
                if (out.positions.back() == static_cast<int64_t>(prompt.size() - 1))
                  last.assign(out.logits.end() - vocab, out.logits.end());
              });
  result.read_seconds = seconds_since(read_start);
  require(last.size() == vocab, "the stack emitted no logits for the last prompt position");
  GenerateResult generated = generate_after(stack, last, static_cast<int64_t>(prompt.size()), options, on_token);
  generated.prompt_tokens = result.prompt_tokens;
  generated.prompt_logits = std::move(result.prompt_logits);
  generated.read_seconds = result.read_seconds;
  return generated;
}

GenerateResult generate_after(TransformerStack& stack, std::span<const float> last_logits, int64_t next_position,
                              const GenerateOptions& options, const std::function<void(uint32_t)>& on_token) {
  Sampler sampler(options.sampling);
  const uint32_t vocab = stack.config().vocab;
  require(vocab > 0 && last_logits.size() == vocab,
          "generation needs one row of logits (" + std::to_string(vocab) + "), got " + std::to_string(last_logits.size()));
  require(next_position >= 0 && static_cast<uint64_t>(next_position) + options.max_tokens < kMaxPositions,
          "prompt and budget exceed 2^31 positions");
  GenerateResult result;
  std::vector<float> last(last_logits.begin(), last_logits.end());
  const auto generate_start = std::chrono::steady_clock::now();
  StackRequest request;
  request.hidden = false;
  request.logits = true;
  for (uint32_t n = 0; n < options.max_tokens; ++n) {
    const uint32_t token = sampler.sample(last);
    if (std::find(options.stop_tokens.begin(), options.stop_tokens.end(), token) != options.stop_tokens.end()) {
      result.stopped = true;
      break;
    }
    result.tokens.push_back(token);
    if (on_token) on_token(token);
    if (n + 1 == options.max_tokens) break;  // the budget is spent: no logits needed past it
    const int64_t position = next_position + n;
    StackChunk one;
    one.rows = 1;
    one.tokens = std::span<const uint32_t>(&result.tokens.back(), 1);
    one.positions = std::span<const int64_t>(&position, 1);
    last = std::move(stack.decode(one, request).logits);
  }
  result.generate_seconds = seconds_since(generate_start);
  return result;
}

}  // namespace attendre
