#include "core/try.hpp"
#include "gguf/gguf.hpp"
#include "model/gguf_architecture.hpp"
#include "gguf/gguf_weights.hpp"
#include "model/model_tokenizer.hpp"

#include <attendre/model.hpp>

namespace attendre {

// Built in place and never moved (Model holds it by pointer): the weights
// refer to the file.
struct Model::Impl {
  Impl(gguf::File opened, gguf::ModelDescription described, Tokenizer vocabulary)
      : file(std::move(opened)),
        description(std::move(described)),
        weights(file, description.naming, description.scaled, description.slices),
        tokenizer(std::move(vocabulary)) {}
  gguf::File file;
  gguf::ModelDescription description;
  gguf::FileWeights weights;
  Tokenizer tokenizer;
};

Result<Model> Model::open(const std::filesystem::path& path, const ModelOptions& options) {
  ATTENDRE_TRY_ASSIGN(gguf::File file, gguf::File::open(path));
  // The description refers to nothing in `file` (a File's bytes stay where
  // they are when it moves), so it is read before the Impl takes the file.
  ATTENDRE_TRY_ASSIGN(gguf::ModelDescription description, gguf::describe_model(file, options.weights));
  ATTENDRE_TRY_ASSIGN(Tokenizer tokenizer, TokenizerAccess::from_file(file));
  return Model(std::make_unique<Impl>(std::move(file), std::move(description), std::move(tokenizer)));
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

Result<StackConfig> Model::stack_config(const MemoryPlan& memory) const {
  const gguf::ModelDescription& d = impl_->description;
  ATTENDRE_REQUIRE(d.info.kind != ModelKind::encoder_decoder,
                   path().string() + ": " + d.info.architecture + " is an encoder-decoder: use encoder_decoder_config()");
  StackConfig config = d.stack;
  ATTENDRE_TRY(apply_memory(config, memory));
  ATTENDRE_TRY(config.check());
  return config;
}

Result<EncoderDecoderConfig> Model::encoder_decoder_config(const EncoderDecoderPlan& memory) const {
  const gguf::ModelDescription& d = impl_->description;
  ATTENDRE_REQUIRE(d.info.kind == ModelKind::encoder_decoder,
                   path().string() + ": " + d.info.architecture + " is not an encoder-decoder: use stack_config()");
  EncoderDecoderConfig config{d.stack, *d.decoder, 0};
  ATTENDRE_TRY(apply_encoder_decoder_memory(config, memory));
  ATTENDRE_TRY(config.check());
  return config;
}

}  // namespace attendre
