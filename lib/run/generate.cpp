#include "core/try.hpp"

#include <attendre/encoder_decoder.hpp>
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

// One position through the decoder: its logits.
using DecodeOne = std::function<Result<std::vector<float>>(uint32_t token, int64_t position)>;

// Samples from `last` (the logits that predict position `next`), feeds each
// token back through `decode` until a stop token or the budget.
Status sample_tokens(std::vector<float> last, int64_t next, const GenerateOptions& options, const DecodeOne& decode,
                     const std::function<void(uint32_t)>& on_token, GenerateResult& result) {
  ATTENDRE_TRY_ASSIGN(Sampler sampler, Sampler::create(options.sampling));
  const auto generate_start = std::chrono::steady_clock::now();
  for (uint32_t n = 0; n < options.max_tokens; ++n) {
    ATTENDRE_TRY_ASSIGN(const uint32_t token, sampler.sample(last));
    if (std::find(options.stop_tokens.begin(), options.stop_tokens.end(), token) != options.stop_tokens.end()) {
      result.stopped = true;
      break;
    }
    result.tokens.push_back(token);
    if (on_token) on_token(token);
    if (n + 1 == options.max_tokens) break;  // the budget is spent: no logits needed past it
    ATTENDRE_TRY_ASSIGN(last, decode(token, next + n));
  }
  result.generate_seconds = seconds_since(generate_start);
  return {};
}

StackChunk one_position(const uint32_t& token, const int64_t& position) {
  StackChunk one;
  one.rows = 1;
  one.tokens = std::span<const uint32_t>(&token, 1);
  one.positions = std::span<const int64_t>(&position, 1);
  return one;
}

}  // namespace

double GenerateResult::read_tokens_per_s() const { return rate(prompt_tokens, read_seconds); }

double GenerateResult::generate_tokens_per_s() const {
  return rate(tokens.size() + (stopped ? 1 : 0), generate_seconds);
}

Status read_tokens(TransformerStack& stack, std::span<const uint32_t> tokens, LogitsWanted wanted, bool flush,
                   const std::function<void(StackOutput&&)>& on_output, size_t logits_from) {
  const StackConfig& c = stack.config();
  ATTENDRE_REQUIRE(!tokens.empty(), "nothing to read: the token sequence is empty");
  ATTENDRE_REQUIRE(c.vocab > 0, "reading tokens needs a stack with a vocabulary");
  ATTENDRE_REQUIRE(tokens.size() < kMaxPositions,
                   "a sequence of " + std::to_string(tokens.size()) + " tokens exceeds 2^31 positions");
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
    const bool wanted_here = wanted == LogitsWanted::all ? first + rows > logits_from : last_step;
    ATTENDRE_TRY_ASSIGN(StackOutput out, stack.step(chunk, wanted_here ? logits : quiet));
    on_output(std::move(out));
  }
  ATTENDRE_TRY_ASSIGN(StackOutput rest, stack.finish(logits, flush));
  on_output(std::move(rest));
  return {};
}

Result<GenerateResult> generate(TransformerStack& stack, std::span<const uint32_t> prompt,
                                const GenerateOptions& options, const std::function<void(uint32_t)>& on_token) {
  ATTENDRE_TRY(options.sampling.check());  // before the read, not after it
  const uint32_t vocab = stack.config().vocab;
  ATTENDRE_REQUIRE(prompt.size() + options.max_tokens < kMaxPositions, "prompt and budget exceed 2^31 positions");
  GenerateResult result;
  result.prompt_tokens = prompt.size();
  std::vector<float> last;  // the logits of the last prompt position
  const auto read_start = std::chrono::steady_clock::now();
  ATTENDRE_TRY(read_tokens(
  stack, prompt, options.prompt_logits ? LogitsWanted::all : LogitsWanted::last, options.flush,
  [&](StackOutput&& out) {
    if (out.logits.empty()) return;
    if (options.prompt_logits) result.prompt_logits.insert(result.prompt_logits.end(), out.logits.begin(), out.logits.end());
    if (out.positions.back() == static_cast<int64_t>(prompt.size() - 1))
      last.assign(out.logits.end() - vocab, out.logits.end());
  }));
  result.read_seconds = seconds_since(read_start);
  ATTENDRE_REQUIRE(last.size() == vocab, "the stack emitted no logits for the last prompt position");
  ATTENDRE_TRY_ASSIGN(GenerateResult generated,
                      generate_after(stack, last, static_cast<int64_t>(prompt.size()), options, on_token));
  generated.prompt_tokens = result.prompt_tokens;
  generated.prompt_logits = std::move(result.prompt_logits);
  generated.read_seconds = result.read_seconds;
  return generated;
}

Result<GenerateResult> generate_after(TransformerStack& stack, std::span<const float> last_logits,
                                      int64_t next_position, const GenerateOptions& options,
                                      const std::function<void(uint32_t)>& on_token) {
  ATTENDRE_TRY(options.sampling.check());
  const uint32_t vocab = stack.config().vocab;
  ATTENDRE_REQUIRE(vocab > 0 && last_logits.size() == vocab, "generation needs one row of logits (" +
                                                                  std::to_string(vocab) + "), got " +
                                                                  std::to_string(last_logits.size()));
  ATTENDRE_REQUIRE(next_position >= 0,
                   "next_position is " + std::to_string(next_position) + ": positions start at 0");
  ATTENDRE_REQUIRE(static_cast<uint64_t>(next_position) + options.max_tokens < kMaxPositions,
                   "next_position " + std::to_string(next_position) + " plus max_tokens " +
                       std::to_string(options.max_tokens) + " exceeds 2^31 positions");
  GenerateResult result;
  StackRequest request;
  request.hidden = false;
  request.logits = true;
  const DecodeOne decode = [&](uint32_t token, int64_t position) -> Result<std::vector<float>> {
    ATTENDRE_TRY_ASSIGN(StackOutput out, stack.decode(one_position(token, position), request));
    return std::move(out.logits);
  };
  ATTENDRE_TRY(sample_tokens(std::vector<float>(last_logits.begin(), last_logits.end()), next_position, options, decode,
                             on_token, result));
  return result;
}

Result<GenerateResult> generate(EncoderDecoder& model, std::span<const uint32_t> input, uint32_t decoder_start,
                                const GenerateOptions& options, const std::function<void(uint32_t)>& on_token) {
  ATTENDRE_TRY(options.sampling.check());
  const EncoderDecoderConfig& c = model.config();
  ATTENDRE_REQUIRE(!input.empty(), "nothing to encode: the input is empty");
  ATTENDRE_REQUIRE(c.encoder.vocab > 0 && c.decoder.vocab > 0,
                   "generation needs an encoder and a decoder with vocabularies");
  ATTENDRE_REQUIRE(input.size() < kMaxPositions && options.max_tokens < kMaxPositions,
                   "input or budget exceed 2^31 positions");
  ATTENDRE_REQUIRE(!options.prompt_logits, "an encoder-decoder's input has no logits: the encoder emits hidden states");
  ATTENDRE_REQUIRE(!options.flush, "an encoder-decoder finishes encoding by draining (finish_encoding())");
  GenerateResult result;
  result.prompt_tokens = input.size();
  const auto read_start = std::chrono::steady_clock::now();
  std::vector<int64_t> positions(c.encoder.chunk);
  for (size_t first = 0; first < input.size(); first += c.encoder.chunk) {
    StackChunk chunk;
    chunk.rows = static_cast<uint32_t>(std::min<size_t>(c.encoder.chunk, input.size() - first));
    for (uint32_t r = 0; r < chunk.rows; ++r) positions[r] = static_cast<int64_t>(first + r);
    chunk.tokens = input.subspan(first, chunk.rows);
    chunk.positions = std::span<const int64_t>(positions).first(chunk.rows);
    ATTENDRE_TRY(model.encode(chunk));
  }
  ATTENDRE_TRY(model.finish_encoding());
  result.read_seconds = seconds_since(read_start);

  StackRequest request;
  request.hidden = false;
  request.logits = true;
  const DecodeOne decode = [&](uint32_t token, int64_t position) -> Result<std::vector<float>> {
    ATTENDRE_TRY_ASSIGN(StackOutput out, model.decode(one_position(token, position), request));
    return std::move(out.logits);
  };
  // The decoder starts from its start token at position 0; the first
  // sampled token sits at position 1.
  const auto start_time = std::chrono::steady_clock::now();
  ATTENDRE_TRY_ASSIGN(std::vector<float> first_logits, decode(decoder_start, 0));
  ATTENDRE_TRY(sample_tokens(std::move(first_logits), 1, options, decode, on_token, result));
  result.generate_seconds = seconds_since(start_time);  // the start token's step included
  return result;
}

}  // namespace attendre
