// The encoder-decoder on the device: the encoder's final rows go into the
// encoder output memory (a device ring of O rows) inside the encoder's own
// command buffers; loading the decoder's cross-attention memories and
// decoding never bring them back to the host.
#include "gpu/stack_engine.hpp"
#include "core/try.hpp"

#include <attendre/data_only_memory.hpp>
#include <attendre/gpu_encoder_decoder.hpp>
#include <attendre/error.hpp>
#include <attendre/gpu_stack.hpp>

namespace attendre::gpu {
namespace {

struct MemoryRow {
  int64_t position = 0;
  uint64_t sequence = 0;  // ring slot = sequence % O
};

}  // namespace

struct EncoderDecoder::Impl {
  Impl(const EncoderDecoderConfig& c, WeightSource& weights)
      : config(c), encoder_weights(weights, "enc."), decoder_weights(weights, "dec."), fifo(c.encoder_memory) {}

  // The memory and both stacks, made in place (the decoder binds `memory`).
  Status build(Context& ctx) {
    const EncoderDecoderConfig& c = config;
    ATTENDRE_TRY_ASSIGN(memory, vk::Buffer::create(ctx, uint64_t{c.encoder_memory} * c.encoder.hidden * 4,
                                                   vk::MemoryIntent::device, "encoder memory"));
    ATTENDRE_TRY_ASSIGN(std::unique_ptr<StackEngine> encoding, StackEngine::create(ctx, c.encoder, encoder_weights));
    ATTENDRE_TRY_ASSIGN(std::unique_ptr<StackEngine> decoding,
                        StackEngine::create(ctx, c.decoder, decoder_weights, &memory));
    encoder = StackAccess::wrap(std::move(encoding));
    decoder = StackAccess::wrap(std::move(decoding));
    // The encoder's valid outputs enter the FIFO memory as its step records them.
    StackAccess::engine(*encoder).on_output = [this](vk::CommandRecorder& rec, const vk::Buffer& rows,
                                const std::vector<QueryMeta>& metas) {
      const uint64_t H = config.encoder.hidden, O = config.encoder_memory;
      std::vector<MemoryRow> entering;
      for (size_t i = 0; i < metas.size(); ++i) {
        if (!metas[i].valid) continue;
        const uint64_t slot = next_sequence % O;
        rec.copy(rows, i * H * 4, memory, slot * H * 4, H * 4);
        entering.push_back({metas[i].position, next_sequence++});
      }
      fifo.insert(std::move(entering));
    };
    return {};
  }

  EncoderDecoderConfig config;
  PrefixedWeights encoder_weights, decoder_weights;
  vk::Buffer memory;
  std::unique_ptr<Stack> encoder, decoder;
  DataOnlyMemory<MemoryRow> fifo;
  uint64_t next_sequence = 0;
  bool encoded = false;
};

Result<std::unique_ptr<EncoderDecoder>> EncoderDecoder::create(Context& context, const EncoderDecoderConfig& config,
                                                               WeightSource& weights) {
  ATTENDRE_TRY(config.check());
  auto impl = std::make_unique<Impl>(config, weights);
  ATTENDRE_TRY(impl->build(context));
  return std::unique_ptr<EncoderDecoder>(new EncoderDecoder(std::move(impl)));
}
EncoderDecoder::EncoderDecoder(std::unique_ptr<Impl>&& impl) : impl_(std::move(impl)) {}
EncoderDecoder::~EncoderDecoder() = default;

const EncoderDecoderConfig& EncoderDecoder::config() const { return impl_->config; }

Status EncoderDecoder::encode(const StackChunk& chunk) {
  ATTENDRE_REQUIRE(!impl_->encoded, "encode() after finish_encoding()");
  StackRequest nothing;
  nothing.hidden = false;
  return impl_->encoder->step(chunk, nothing).status();
}

Status EncoderDecoder::finish_encoding() {
  Impl& m = *impl_;
  ATTENDRE_REQUIRE(!m.encoded, "finish_encoding() twice");
  StackRequest nothing;
  nothing.hidden = false;
  ATTENDRE_TRY(m.encoder->finish(nothing));
  std::vector<int64_t> positions;
  for (const MemoryRow& r : m.fifo.entries()) positions.push_back(r.position);
  const uint32_t first = m.fifo.size() ? static_cast<uint32_t>(m.fifo.entries().front().sequence % m.config.encoder_memory) : 0;
  ATTENDRE_TRY(StackAccess::engine(*m.decoder).load_encoder_memory(
      kernels::RowRef::ring(m.config.encoder.hidden, m.config.encoder_memory, first), positions));
  ATTENDRE_TRY(m.decoder->finish());  // nothing waits in the decoder: decoding may start
  m.encoded = true;
  return {};
}

Result<StackOutput> EncoderDecoder::decode(const StackChunk& one, const StackRequest& request) {
  ATTENDRE_REQUIRE(impl_->encoded, "decode() before finish_encoding()");
  return impl_->decoder->decode(one, request);
}

std::vector<int64_t> EncoderDecoder::encoder_memory_positions() const {
  std::vector<int64_t> positions;
  for (const MemoryRow& r : impl_->fifo.entries()) positions.push_back(r.position);
  return positions;
}

}  // namespace attendre::gpu
