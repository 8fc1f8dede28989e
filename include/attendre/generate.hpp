// Text generation over any TransformerStack (the GPU stack or the float64
// reference): the prompt streams through the stack in chunks of S and
// drains (or flushes); then tokens are sampled on the host from the logits
// and fed back through decode(), which keeps inserting each new key under
// every block's policy.
#pragma once

#include <attendre/encoder_decoder.hpp>
#include <attendre/stack.hpp>

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

namespace attendre {

struct SamplingOptions {
  double temperature = 0.0;  // 0: greedy (the largest logit, the smaller id on ties)
  double top_p = 1.0;        // nucleus: sample among the most likely tokens whose probability reaches top_p
  uint64_t seed = 0;
  // invalid_argument naming the field, or ok: temperature finite and >= 0, top_p in (0, 1].
  Status check() const;
};

// Picks tokens from rows of logits. Draws come from a local generator
// (splitmix64, 53-bit uniforms), not from <random>'s distributions, whose
// results differ between standard libraries: one seed gives the same
// tokens on every platform.
class Sampler {
 public:
  // invalid_argument (SamplingOptions::check) for bad options.
  static Result<Sampler> create(const SamplingOptions& options);
  // Greedy: the largest logit. Otherwise softmax(logits / temperature),
  // restricted to the smallest set of most likely tokens (ties: smaller id
  // first) whose probability reaches top_p, and one draw from it.
  // A -inf logit masks its token out (weight 0). invalid_argument for an
  // empty row; numerical_error for a row holding NaN or +inf (as for
  // non-finite values the device computes), which no ordering or softmax of
  // the row could make sense of, or one whose every logit is -inf.
  Result<uint32_t> sample(std::span<const float> logits);

 private:
  struct Checked {};
  Sampler(const SamplingOptions& options, Checked);
  double uniform();  // in [0, 1)
  SamplingOptions options_;
  uint64_t state_;
  std::vector<double> weights_;
  std::vector<uint32_t> order_;
};

// Which positions' logits a read needs: every one (perplexity, --logits) or
// only the last (generation, which then skips the LM head until the final
// steps).
enum class LogitsWanted { all, last };

// Feeds `tokens` at positions 0, 1, ... in chunks of the stack's S, then
// finish() (draining, or flushing with `flush`); hands every output to
// `on_output` as it leaves the stack, positions in order, with logits as
// `wanted` says (no hidden states). With `all`, a step whose positions all
// precede `logits_from` asks for none (its LM head skipped: nothing it
// emits can be at or past logits_from, since a position leaves the stack
// in the step it enters or later), so outputs before logits_from may come
// without logits. Fails with invalid_argument on an empty sequence or a
// stack without a vocabulary.
Status read_tokens(TransformerStack& stack, std::span<const uint32_t> tokens, LogitsWanted wanted, bool flush,
                   const std::function<void(StackOutput&&)>& on_output, size_t logits_from = 0);

struct GenerateOptions {
  uint32_t max_tokens = 128;         // budget of generated tokens
  SamplingOptions sampling;
  std::vector<uint32_t> stop_tokens;  // EOS (and end-of-turn) ids: generation ends on one, not kept
  bool flush = false;                 // finish reading the prompt by flushing instead of draining
  bool prompt_logits = false;         // keep the logits of every prompt position
};

struct GenerateResult {
  std::vector<uint32_t> tokens;      // generated, the stop token excluded
  bool stopped = false;              // a stop token ended it (else the budget)
  std::vector<float> prompt_logits;  // [prompt][vocab] with prompt_logits, else empty
  uint64_t prompt_tokens = 0;
  double read_seconds = 0.0;      // streaming and draining the prompt
  double generate_seconds = 0.0;  // sampling and decoding
  double read_tokens_per_s() const;
  double generate_tokens_per_s() const;  // tokens sampled per second (a stop token counts)
};

// Reads `prompt`, then samples up to max_tokens tokens at positions
// prompt.size(), prompt.size() + 1, ...; `on_token` sees each one as it is
// chosen (before the next decode step), for streaming output.
Result<GenerateResult> generate(TransformerStack& stack, std::span<const uint32_t> prompt,
                                const GenerateOptions& options, const std::function<void(uint32_t)>& on_token = {});

// Encoder-decoder generation (T5): `input` streams through the encoder at
// positions 0, 1, ... in chunks of its S and finish_encoding() drains it;
// the decoder then starts from `decoder_start` at position 0 and samples up
// to max_tokens tokens at positions 1, 2, ... (the decoder's self-attention
// must hold max_tokens positions to keep them all). prompt_tokens counts
// the input, read_seconds its encoding; prompt_logits and flush are refused
// (invalid_argument): the encoder emits no logits and drains.
Result<GenerateResult> generate(EncoderDecoder& model, std::span<const uint32_t> input, uint32_t decoder_start,
                                const GenerateOptions& options, const std::function<void(uint32_t)>& on_token = {});

// Generation after a prompt the caller streamed and finished itself (the
// reader feeds a document chunk by chunk): `last_logits` are the last
// prompt position's, `next_position` the position of the first generated
// token (the prompt's length). Samples and decodes as generate() does;
// prompt_tokens and read_seconds stay 0, `flush` and `prompt_logits` are
// not used. Fails with invalid_argument when the logits are not one row of the
// vocabulary; decode() refuses a stack that has not finished.
Result<GenerateResult> generate_after(TransformerStack& stack, std::span<const float> last_logits,
                                      int64_t next_position, const GenerateOptions& options,
                                      const std::function<void(uint32_t)>& on_token = {});

}  // namespace attendre
