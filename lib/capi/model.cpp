// Models (GGUF files) and tokenizers.
#include "capi/capi.hpp"

using namespace attendre;
using namespace attendre::capi;

namespace {

const char* policy_name(PolicyKind kind) {
  // Static C strings for the header's const char* (to_string gives views).
  static constexpr const char* names[] = {"fifo", "lru", "lfu", "lra_last", "lra_max", "lra_sum", "lfa"};
  return names[static_cast<size_t>(kind)];
}

}  // namespace

extern "C" {

attendre_status attendre_model_open(const char* path, const attendre_model_options* options, attendre_model** model) {
  return guard([&]() -> Outcome {
    ATTENDRE_C_NEED(model, "attendre_model_open: model");
    *model = nullptr;
    ModelOptions o;
    if (options && options->f16_weights) o.weights = WeightType::f16;
    ATTENDRE_C_NEED(path, "attendre_model_open: path");
    ATTENDRE_TRY_ASSIGN(Model opened, Model::open(path, o));
    *model = new attendre_model(std::move(opened));
    return ATTENDRE_OK;
  });
}

void attendre_model_destroy(attendre_model* model) { delete model; }

attendre_status attendre_model_info_get(const attendre_model* model, attendre_model_info* info) {
  return guard([&]() -> Outcome {
    ATTENDRE_C_NEED(model, "attendre_model_info_get: model");
    const Model& m = model->model;
    ATTENDRE_C_NEED(info, "attendre_model_info_get: info");
    attendre_model_info& out = *info;
    const ModelInfo& i = m.info();
    ATTENDRE_TRY_ASSIGN(const StackConfig config, m.stack_config(m.default_memory()));
    out.architecture = i.architecture.c_str();
    out.name = i.name.c_str();
    out.context_length = i.context_length;
    out.blocks = i.blocks;
    out.hidden = config.hidden;
    out.vocab = config.vocab;
    out.parameters = i.parameters;
    out.tensor_bytes = i.tensor_bytes;
    return ATTENDRE_OK;
  });
}

attendre_status attendre_model_default_memory(const attendre_model* model, attendre_memory_setting* setting) {
  return guard([&]() -> Outcome {
    ATTENDRE_C_NEED(model, "attendre_model_default_memory: model");
    const MemoryPlan plan = model->model.default_memory();
    ATTENDRE_C_NEED(setting, "attendre_model_default_memory: setting");
    attendre_memory_setting& s = *setting;
    attendre_memory_setting_defaults(&s);
    s.chunk = plan.chunk;
    s.q_capacity = plan.all.q_capacity;
    s.kv_capacity = plan.all.kv.capacity;
    s.top_k = plan.all.top_k;
    s.policy = policy_name(plan.all.kv.policy.kind);
    s.lambda = plan.all.kv.policy.lambda;
    s.n_sink = plan.all.kv.n_sink;
    s.n_recent = plan.all.kv.n_recent;
    s.protect_new = plan.all.kv.protect_new;
    s.fp16_memory = plan.all.kv.storage == MemoryStorage::f16;
    s.shared_retrieval = plan.all.mode == RetrievalMode::shared;
    s.causal = plan.all.causal;
    s.flush_capable = plan.flush_capable;
    s.fp16_activations = plan.activations == MemoryStorage::f16;
    return ATTENDRE_OK;
  });
}

attendre_status attendre_tokenizer_open(const char* path, attendre_tokenizer** tokenizer) {
  return guard([&]() -> Outcome {
    ATTENDRE_C_NEED(tokenizer, "attendre_tokenizer_open: tokenizer");
    *tokenizer = nullptr;
    ATTENDRE_C_NEED(path, "attendre_tokenizer_open: path");
    ATTENDRE_TRY_ASSIGN(Tokenizer opened, Tokenizer::open(path));
    *tokenizer = new attendre_tokenizer(std::move(opened));
    return ATTENDRE_OK;
  });
}

attendre_status attendre_model_tokenizer(const attendre_model* model, attendre_tokenizer** tokenizer) {
  return guard([&]() -> Outcome {
    ATTENDRE_C_NEED(tokenizer, "attendre_model_tokenizer: tokenizer");
    *tokenizer = nullptr;
    ATTENDRE_C_NEED(model, "attendre_model_tokenizer: model");
    *tokenizer = new attendre_tokenizer(model->model.tokenizer());
    return ATTENDRE_OK;
  });
}

void attendre_tokenizer_destroy(attendre_tokenizer* tokenizer) { delete tokenizer; }

void attendre_encode_options_defaults(attendre_encode_options* options) {
  if (!options) return;
  *options = attendre_encode_options{};
  options->add_bos = -1;
}

attendre_status attendre_tokenizer_encode(const attendre_tokenizer* tokenizer, const char* text, size_t length,
                                          const attendre_encode_options* options, uint32_t* ids, size_t* count) {
  return guard([&]() -> Outcome {
    ATTENDRE_C_NEED(tokenizer, "attendre_tokenizer_encode: tokenizer");
    const Tokenizer& t = tokenizer->tokenizer;
    if (length > 0) ATTENDRE_C_NEED(text, "attendre_tokenizer_encode: text");
    Tokenizer::EncodeOptions o;
    if (options) {
      ATTENDRE_REQUIRE(options->add_bos >= -1 && options->add_bos <= 1,
                       "attendre_tokenizer_encode: add_bos " + std::to_string(options->add_bos) + " is not -1, 0 or 1");
      if (options->add_bos >= 0) o.add_bos = options->add_bos == 1;
      o.parse_special = options->parse_special != 0;
      o.continuation = options->continuation != 0;
      o.more_follows = options->more_follows != 0;
    }
    ATTENDRE_TRY_ASSIGN(const std::vector<uint32_t> out, t.encode(std::string_view(text ? text : "", length), o));
    return copy_out(std::span<const uint32_t>(out), ids, count, "attendre_tokenizer_encode");
  });
}

attendre_status attendre_tokenizer_decode(const attendre_tokenizer* tokenizer, const uint32_t* ids, size_t id_count,
                                          char* text, size_t* count) {
  return guard([&]() -> Outcome {
    ATTENDRE_C_NEED(tokenizer, "attendre_tokenizer_decode: tokenizer");
    const Tokenizer& t = tokenizer->tokenizer;
    if (id_count > 0) ATTENDRE_C_NEED(ids, "attendre_tokenizer_decode: ids");
    ATTENDRE_TRY_ASSIGN(const std::string decoded, t.decode(std::span<const uint32_t>(ids, id_count)));
    return copy_text(decoded, text, count, "attendre_tokenizer_decode");
  });
}

attendre_status attendre_tokenizer_piece(const attendre_tokenizer* tokenizer, uint32_t id, char* text, size_t* count) {
  return guard([&]() -> Outcome {
    ATTENDRE_C_NEED(tokenizer, "attendre_tokenizer_piece: tokenizer");
    const Tokenizer& t = tokenizer->tokenizer;
    ATTENDRE_REQUIRE(id < t.size(), "attendre_tokenizer_piece: token " + std::to_string(id) +
                                        " is past the vocabulary's " + std::to_string(t.size()));
    ATTENDRE_TRY_ASSIGN(const std::string_view piece, t.piece(id));
    return copy_text(piece, text, count, "attendre_tokenizer_piece");
  });
}

attendre_status attendre_tokenizer_info_get(const attendre_tokenizer* tokenizer, attendre_tokenizer_info* info) {
  return guard([&]() -> Outcome {
    ATTENDRE_C_NEED(tokenizer, "attendre_tokenizer_info_get: tokenizer");
    const Tokenizer& t = tokenizer->tokenizer;
    ATTENDRE_C_NEED(info, "attendre_tokenizer_info_get: info");
    attendre_tokenizer_info& out = *info;
    out.size = t.size();
    out.bos = t.bos() ? int64_t{*t.bos()} : -1;
    out.eos = t.eos() ? int64_t{*t.eos()} : -1;
    return ATTENDRE_OK;
  });
}

attendre_status attendre_tokenizer_stop_tokens(const attendre_tokenizer* tokenizer, uint32_t* ids, size_t* count) {
  return guard([&]() -> Outcome {
    ATTENDRE_C_NEED(tokenizer, "attendre_tokenizer_stop_tokens: tokenizer");
    const Tokenizer& t = tokenizer->tokenizer;
    // Copied whole, nothing filtered: the loader refuses a vocabulary whose
    // EOS or end-of-turn id lies outside it, so every id here is a token.
    return copy_out(std::span<const uint32_t>(t.stop_tokens()), ids, count, "attendre_tokenizer_stop_tokens");
  });
}

attendre_status attendre_continuation_point(const char* text, size_t length, size_t limit, size_t* point) {
  return guard([&]() -> Outcome {
    if (length > 0) ATTENDRE_C_NEED(text, "attendre_continuation_point: text");
    ATTENDRE_C_NEED(point, "attendre_continuation_point: point");
    *point = Tokenizer::continuation_point(std::string_view(text ? text : "", length), limit);
    return ATTENDRE_OK;
  });
}

}  // extern "C"
