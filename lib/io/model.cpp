#include "core/fail.hpp"
#include "io/gguf.hpp"
#include "io/gguf_architecture.hpp"
#include "io/gguf_weights.hpp"
#include "io/model_tokenizer.hpp"

#include <attendre/model.hpp>

namespace attendre {

// Built in place and never moved (Model holds it by pointer): the weights
// refer to the file.
struct Model::Impl {
  explicit Impl(gguf::File opened, WeightType storage)
      : file(std::move(opened)),
        description(gguf::describe_model(file, storage)),
        weights(file, description.naming, description.scaled),
        tokenizer(TokenizerAccess::from_file(file)) {}
  gguf::File file;
  gguf::ModelDescription description;
  gguf::FileWeights weights;
  Tokenizer tokenizer;
};

Model Model::open(const std::filesystem::path& path, const ModelOptions& options) {
  return Model(std::make_unique<Impl>(gguf::File::open(path), options.weights));
}

Model::Model(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Model::Model(Model&&) noexcept = default;
Model& Model::operator=(Model&&) noexcept = default;
Model::~Model() = default;

const std::filesystem::path& Model::path() const { return impl_->file.path(); }
const ModelInfo& Model::info() const { return impl_->description.info; }
MemoryPlan Model::default_memory() const { return impl_->description.default_memory; }
WeightSource& Model::weights() { return impl_->weights; }
const Tokenizer& Model::tokenizer() const { return impl_->tokenizer; }

StackConfig Model::stack_config(const MemoryPlan& memory) const {
  const gguf::ModelDescription& d = impl_->description;
  require(d.info.kind != ModelKind::encoder_decoder,
          path().string() + ": " + d.info.architecture + " is an encoder-decoder: use encoder_decoder_config()");
  StackConfig config = d.stack;
  apply_memory(config, memory);
  config.validate();
  return config;
}

EncoderDecoderConfig Model::encoder_decoder_config(const EncoderDecoderPlan& memory) const {
  const gguf::ModelDescription& d = impl_->description;
  require(d.info.kind == ModelKind::encoder_decoder,
          path().string() + ": " + d.info.architecture + " is not an encoder-decoder: use stack_config()");
  EncoderDecoderConfig config{d.stack, *d.decoder, 0};
  apply_encoder_decoder_memory(config, memory);
  config.validate();
  return config;
}

}  // namespace attendre
