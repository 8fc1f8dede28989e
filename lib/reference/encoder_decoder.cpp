// Float64 reference of the encoder-decoder (spec section 5).
#include "core/fail.hpp"
#include "core/try.hpp"

#include <attendre/data_only_memory.hpp>
#include <attendre/reference/encoder_decoder.hpp>
#include <attendre/error.hpp>
#include <attendre/reference/stack.hpp>

namespace attendre::reference {
namespace {

struct EncoderRow {
  int64_t position = 0;
  std::vector<double> hidden;
};

}  // namespace

struct EncoderDecoder::Impl {
  Impl(const EncoderDecoderConfig& c, WeightSource& weights)
      : config((c.check().or_throw(), c)),
        encoder_weights(weights, "enc."),
        decoder_weights(weights, "dec."),
        encoder(c.encoder, encoder_weights),
        decoder(c.decoder, decoder_weights),
        memory(c.encoder_memory) {}

  void keep(const StackOutput& out) {
    const uint32_t H = config.encoder.hidden;
    std::vector<EncoderRow> rows;
    for (size_t i = 0; i < out.positions.size(); ++i)
      rows.push_back({out.positions[i], std::vector<double>(out.hidden.begin() + i * H, out.hidden.begin() + (i + 1) * H)});
    memory.insert(std::move(rows));  // FIFO: the oldest outputs leave when O is exceeded
  }

  EncoderDecoderConfig config;
  PrefixedWeights encoder_weights, decoder_weights;
  Stack encoder, decoder;
  DataOnlyMemory<EncoderRow> memory;
  bool encoded = false;
};

EncoderDecoder::EncoderDecoder(const EncoderDecoderConfig& config, WeightSource& weights)
    : impl_(std::make_unique<Impl>(config, weights)) {}
EncoderDecoder::~EncoderDecoder() = default;

const EncoderDecoderConfig& EncoderDecoder::config() const { return impl_->config; }

Status EncoderDecoder::encode(const StackChunk& chunk) {
  ATTENDRE_REQUIRE(!impl_->encoded, "encode() after finish_encoding()");
  ATTENDRE_TRY_ASSIGN(StackOutput out, impl_->encoder.step(chunk));
  return capture([&] { impl_->keep(out); });
}

Status EncoderDecoder::finish_encoding() {
  Impl& m = *impl_;
  ATTENDRE_REQUIRE(!m.encoded, "finish_encoding() twice");
  ATTENDRE_TRY_ASSIGN(StackOutput out, m.encoder.finish());
  ATTENDRE_TRY(capture([&] {
    m.keep(out);
    std::vector<int64_t> positions;
    std::vector<double> rows;
    for (const EncoderRow& r : m.memory.get_all()) {
      positions.push_back(r.position);
      rows.insert(rows.end(), r.hidden.begin(), r.hidden.end());
    }
    m.decoder.load_encoder_memory(positions, rows);
  }));
  ATTENDRE_TRY(m.decoder.finish());  // nothing waits in the decoder: decoding may start
  m.encoded = true;
  return {};
}

Result<StackOutput> EncoderDecoder::decode(const StackChunk& one, const StackRequest& request) {
  ATTENDRE_REQUIRE(impl_->encoded, "decode() before finish_encoding()");
  return impl_->decoder.decode(one, request);
}

std::vector<int64_t> EncoderDecoder::encoder_memory_positions() const {
  std::vector<int64_t> positions;
  for (const EncoderRow& r : impl_->memory.entries()) positions.push_back(r.position);
  return positions;
}

}  // namespace attendre::reference
