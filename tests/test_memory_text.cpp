// The library's memory settings as text (attendre/memory_text.hpp) and its
// names (attendre/memory_names.hpp): the key=value parser every tool's
// --layer uses, the aliases, the reader's preset and the JSON form.
#include "support.hpp"

#include <attendre/memory_names.hpp>
#include <attendre/memory_text.hpp>

#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include <set>
#include <string>
#include <vector>

using namespace attendre;

TEST_CASE("memory text: key=value fields set exactly what they name") {
  const Result<MemoryFields> f = parse_memory_fields("q-capacity=0,kv-capacity=256,top-k=8,sinks=4,recent=16,policy=lfa,lambda=0.5,init-k=-1.5,");
  REQUIRE(f.ok());
  CHECK(f.value().q_capacity == 0u);
  CHECK(f.value().kv_capacity == 256u);
  CHECK(f.value().top_k == 8u);
  CHECK(f.value().sinks == 4u);
  CHECK(f.value().recent == 16u);
  CHECK(f.value().policy == PolicyKind::lfa);
  CHECK(f.value().lambda == 0.5);
  CHECK(f.value().init_k == -1.5);

  MemorySetting s;
  s.kv.capacity = 9;
  s.kv.policy = Policy::lra_sum(InitialScore::mean_minus_sigma(2.0));
  apply_memory_fields(s, parse_memory_fields("recent=3").value());
  CHECK(s.kv.n_recent == 3u);
  CHECK(s.kv.capacity == 9u);  // untouched
  CHECK(s.kv.policy.kind == PolicyKind::lra_sum);
  apply_memory_fields(s, parse_memory_fields("lambda=0.25").value());
  CHECK(s.kv.policy.kind == PolicyKind::lra_sum);  // keeps the kind and k
  CHECK(s.kv.policy.lambda == 0.25);
  CHECK(s.kv.policy.initial.k == 2.0);
}

TEST_CASE("memory text: bad fields are one-line invalid_argument errors naming the field") {
  const auto refused = [](const char* text, const std::string& phrase) {
    const Result<MemoryFields> f = parse_memory_fields(text);
    INFO(text);
    REQUIRE_FALSE(f.ok());
    CHECK(f.status().code() == ErrorCode::invalid_argument);
    CHECK_MESSAGE(f.status().message().find(phrase) != std::string::npos, f.status().message());
    CHECK(f.status().message().find('\n') == std::string::npos);
  };
  refused("", "no setting");
  refused("q-capacity", "expected NAME=VALUE, got 'q-capacity'");
  refused("q-capacity=1,,top-k=2", "expected NAME=VALUE, got ''");
  refused("window=3", "unknown setting 'window' (q-capacity, kv-capacity, top-k, sinks, recent, policy, lambda, init-k)");
  refused("kv-capacity=0", "kv-capacity: expected a positive integer, got '0'");
  refused("recent=-1", "recent: expected a non-negative integer, got '-1'");
  refused("sinks=4294967296", "sinks: 4294967296 is too large (at most 4294967295)");
  refused("lambda=-1", "lambda: expected a finite number >= 0, got '-1'");
  refused("init-k=nan", "init-k: expected a finite number, got 'nan'");
  refused("policy=h2o", "policy: expected one of fifo, lru, lfu, lra_last, lra_max, lra_sum, lfa, got 'h2o'");
}

TEST_CASE("memory names: aliases set their policy and their sinks or window, given values win") {
  KvMemoryConfig kv;
  kv.capacity = 256;
  REQUIRE(apply_memory_name(kv, "streamingllm").ok());
  CHECK(kv.policy.kind == PolicyKind::fifo);
  CHECK(kv.n_sink == 4u);
  kv = {};
  kv.capacity = 256;
  REQUIRE(apply_memory_name(kv, "sinks", 0u).ok());  // an explicit 0 is kept
  CHECK(kv.n_sink == 0u);
  kv.policy.lambda = 0.1;
  REQUIRE(apply_memory_name(kv, "h2o").ok());
  CHECK(kv.policy.kind == PolicyKind::lfa);
  CHECK(kv.policy.lambda == 0.0);
  CHECK(kv.n_recent == 128u);  // half the budget
  kv.n_sink = 6;
  kv.n_recent = 0;
  REQUIRE(apply_memory_name(kv, "h2o").ok());
  CHECK(kv.n_recent == 125u);  // (256 - 6) / 2: the sinks come off the budget first
  REQUIRE(apply_memory_name(kv, "h2o", std::nullopt, 7u).ok());
  CHECK(kv.n_recent == 7u);
  REQUIRE(apply_memory_name(kv, "tova").ok());
  CHECK(kv.policy.kind == PolicyKind::lra_last);
  REQUIRE(apply_memory_name(kv, "lru").ok());
  CHECK(kv.policy.kind == PolicyKind::lru);
  CHECK(kv.n_recent == 7u);  // a policy name leaves the window
  const Status bad = apply_memory_name(kv, "lifo");
  CHECK(bad.code() == ErrorCode::invalid_argument);
  CHECK(bad.message() ==
        "unknown policy 'lifo' (fifo, lru, lfu, lra_last, lra_max, lra_sum, lfa, or an alias: sinks, streamingllm, tova, h2o)");
  CHECK(memory_names() == "fifo, lru, lfu, lra_last, lra_max, lra_sum, lfa, sinks, streamingllm, tova, h2o");
  for (const char* name : {"fifo", "lfa", "sinks", "streamingllm", "tova", "h2o"}) CHECK(is_memory_name(name));
  CHECK_FALSE(is_memory_name("full"));

  // h2o's default window is always feasible under its own budget.
  LayerConfig c;
  c.chunk = 64;
  c.kv.capacity = 256;
  c.retrieval.top_k = 32;
  REQUIRE(apply_memory_name(c.kv, "h2o").ok());
  CHECK(c.check().ok());
}

TEST_CASE("memory text: the reader preset and the JSON form") {
  const MemoryPreset& preset = reader_memory_preset();
  CHECK(preset.name == "reader");
  CHECK(describe(preset.plan) == "S=32 N=32 M=256 K=32 lambda=0.001");

  StackConfig config;
  config.chunk = 8;
  config.blocks.resize(2);
  config.blocks[0].attention.q_capacity = 3;
  config.blocks[0].attention.kv = KvMemoryConfig{40, Policy::lfa(0.25), 2, 6, true, false, MemoryStorage::f16};
  config.blocks[0].attention.retrieval.top_k = 5;
  config.blocks[0].attention.retrieval.causal = true;
  config.blocks[1].lm_infinite.enabled = true;
  config.blocks[1].lm_infinite.n_local = 100;
  const nlohmann::json j = nlohmann::json::parse(memory_json(config, true));
  CHECK(j["chunk"] == 8);
  CHECK(j["flush"] == true);
  CHECK(j["activations"] == "f32");
  REQUIRE(j["blocks"].size() == 2);
  const nlohmann::json& b = j["blocks"][0];
  CHECK(b["N"] == 3);
  CHECK(b["M"] == 40);
  CHECK(b["K"] == 5);
  CHECK(b["policy"] == "lfa");
  CHECK(b["lambda"] == 0.25);
  CHECK(b["sinks"] == 2);
  CHECK(b["recent"] == 6);
  CHECK(b["storage"] == "f16");
  CHECK(b["causal"] == true);
  CHECK(b["lm_infinite"].is_null());
  CHECK(j["blocks"][1]["lm_infinite"] == 100);
  CHECK(j["blocks"][1]["lambda"].is_number_float());  // 0.0, as a double is written
}

#ifdef ATTENDRE_APP_COMMON
#include "common/memory_options.hpp"

namespace {

// The tools' memory options after parsing `args` (their flags only).
cli::MemoryOptions options_from(const std::vector<std::string>& args) {
  cli::MemoryOptions options;
  cli::OptionTable table;
  options.add_to(table);
  const std::set<std::string> seen = cli::parse_options(table, args);
  options.check(seen, false, false);
  return options;
}

}  // namespace

TEST_CASE("memory text: the tools' --layer takes the library's fields, with the messages it always gave") {
  const auto refused = [](const std::string& layer, const std::string& message) {
    INFO(layer);
    try {
      options_from({"--layer", layer});
      FAIL("accepted");
    } catch (const cli::UsageError& e) {
      CHECK(std::string(e.what()) == message);
    }
  };
  refused("0:kv-capacity=0", "--layer kv-capacity: expected a positive integer, got '0'");
  refused("0:policy=lifo", "--layer policy: expected one of fifo, lru, lfu, lra_last, lra_max, lra_sum, lfa, got 'lifo'");
  refused("0:", "--layer: no setting after ':' in '0:'");
  refused("0:size=64", "--layer: unknown setting 'size' (q-capacity, kv-capacity, top-k, sinks, recent, policy, lambda, init-k)");
  refused("0:q-capacity", "--layer: expected NAME=VALUE, got 'q-capacity'");

  const MemoryPlan plan = options_from({"--chunk", "8", "--kv-capacity", "40", "--policy", "h2o", "--sinks", "4",
                                        "--init-k", "2", "--layer", "1:recent=3,lambda=0.5,policy=lra_sum,top-k=6"})
                              .plan(3, 100, 50);
  CHECK(plan.chunk == 8u);
  CHECK(plan.all.kv.policy.kind == PolicyKind::lfa);
  CHECK(plan.all.kv.policy.lambda == 0.0);
  CHECK(plan.all.kv.policy.initial.k == 2.0);
  CHECK(plan.all.kv.n_sink == 4u);
  CHECK(plan.all.kv.n_recent == 18u);  // (40 - 4) / 2
  const MemorySetting& b = plan.for_block(1);
  CHECK(b.kv.policy.kind == PolicyKind::lra_sum);
  CHECK(b.kv.policy.lambda == 0.5);
  CHECK(b.kv.policy.initial.k == 2.0);
  CHECK(b.kv.n_recent == 3u);
  CHECK(b.top_k == 6u);
  CHECK(b.kv.capacity == 40u);
  CHECK(plan.for_block(2).kv.n_recent == 18u);
}
#endif
