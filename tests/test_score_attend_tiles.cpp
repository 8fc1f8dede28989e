// The direct score and attend kernels (score_direct.comp, attend_direct.comp
// through kernels::RetrieveKernels) in register tiles of every shape,
// against float64 logits, weights and outputs computed here from spec
// 2.2-2.3: score tiles of rows x slots per invocation, their query quads
// shared by subgroup shuffles or loaded by each lane (SHARE 1), over
// batches whose rows and slots fall off the tile, the workgroup and the
// shared chunk (head_dim 40: whole quads, not whole chunks; 13: scalar
// reads); attend tiles of dim quads per invocation off head_dim; GQA 8/2,
// MQA 8/1 and MHA; fp32 and fp16 memories (16-bit loads and unpacked
// words); causal and tag masks, ALiBi, invalid queries, a Q ring that
// wraps; per-head, shared and full lists with padding entries.
#include "kernel_harness.hpp"
#include "support.hpp"

#include "core/half.hpp"
#include "interface/constants.h"
#include "kernels/kernel_plan.hpp"
#include "kernels/retrieve.hpp"
#include "kernels/score_features.hpp"

#include <attendre/config.hpp>

#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>

using namespace attendre;

namespace {

struct Case {
  uint32_t heads_q, heads_kv, head_dim, held, queries;
  bool tag_mask = false, alibi = false;
  uint32_t lists = 0;  // 0: per-head lists, 1: one per query (shared), 2: full (every slot)
};

constexpr uint32_t kKeep = 24;  // list entries per row (list_keep; list_count <= it)
constexpr uint32_t kNaN = 0x7FC00000u;

uint64_t align64(uint64_t words) { return (words + 63) / 64 * 64; }

// Values as a memory stores them: fp16-rounded for fp16 memories.
float stored(float v, MemoryStorage storage) {
  return storage == MemoryStorage::f16 ? half::half_to_float(half::float_to_half(v)) : v;
}

void put(std::vector<uint32_t>& words, uint64_t section, uint64_t e, float v, MemoryStorage storage) {
  if (storage == MemoryStorage::f16)
    words[section + e / 2] |= half::float_to_half(v) << (e % 2 == 0 ? 0 : 16);
  else
    words[section + e] = test::float_bits(v);
}

// One case's host inputs, device words and parameters.
struct Inputs {
  std::vector<float> q, k, v;  // as stored: q [ring row][heads_q][D], k and v [slot][heads_kv][D]
  std::vector<int32_t> query_pos, key_pos;
  std::vector<uint32_t> query_valid, query_tags, key_tags;
  uint32_t ring_capacity = 0, ring_first = 0;
  std::vector<uint32_t> ring_words, kv_words;
  std::vector<float> logits;    // attend's input [row][logit_stride]
  std::vector<uint32_t> slots;  // attend's lists: [list row][list_count], kInvalid for padding
  uint32_t list_count = 0;
  kernels::ScoreParams score{};
  kernels::RetrieveParams attend{};
};

Inputs make_inputs(const Case& c, MemoryStorage storage, std::mt19937_64& rng) {
  std::normal_distribution<float> normal(0.0f, 1.0f);
  const uint32_t D = c.head_dim;
  Inputs in;
  in.ring_capacity = c.queries + 3;
  in.ring_first = c.queries + 1;  // the batch wraps around the ring's end
  const uint64_t q_words = uint64_t{in.ring_capacity} * c.heads_q * D, k_words = uint64_t{c.held} * c.heads_kv * D;
  for (uint64_t i = 0; i < q_words; ++i) in.q.push_back(stored(2.0f * normal(rng), storage));
  for (uint64_t i = 0; i < k_words; ++i) in.k.push_back(stored(normal(rng), storage));
  for (uint64_t i = 0; i < k_words; ++i) in.v.push_back(stored(normal(rng), storage));
  std::uniform_int_distribution<int32_t> position(4, static_cast<int32_t>(2 * c.held + 12));
  for (uint32_t j = 0; j < c.held; ++j) {
    in.key_pos.push_back(position(rng));
    in.key_tags.push_back(j % 3);
  }
  for (uint32_t r = 0; r < in.ring_capacity; ++r) {
    in.query_pos.push_back(position(rng));
    in.query_valid.push_back(r % 5 == 2 ? 0u : 1u);
    in.query_tags.push_back(r % 3);
  }
  const uint64_t ring_pos = align64(q_words), ring_valid = ring_pos + align64(in.ring_capacity),
                 ring_tag = ring_valid + align64(in.ring_capacity);
  in.ring_words.assign(ring_tag + in.ring_capacity, 0u);
  for (uint64_t i = 0; i < q_words; ++i) put(in.ring_words, 0, i, in.q[i], storage);
  for (uint32_t r = 0; r < in.ring_capacity; ++r) {
    in.ring_words[ring_pos + r] = static_cast<uint32_t>(in.query_pos[r]);
    in.ring_words[ring_valid + r] = in.query_valid[r];
    in.ring_words[ring_tag + r] = in.query_tags[r];
  }
  // Keys from word 0, values after them, then positions and tags.
  const uint64_t values = align64(k_words), kv_pos = values + align64(k_words), kv_tag = kv_pos + align64(c.held);
  in.kv_words.assign(kv_tag + c.held, 0u);
  for (uint64_t i = 0; i < k_words; ++i) {
    put(in.kv_words, 0, i, in.k[i], storage);
    put(in.kv_words, values, i, in.v[i], storage);
  }
  for (uint32_t j = 0; j < c.held; ++j) {
    in.kv_words[kv_pos + j] = static_cast<uint32_t>(in.key_pos[j]);
    in.kv_words[kv_tag + j] = in.key_tags[j];
  }
  // fp16 sections count elements from a word: the values' section in words.
  const uint32_t value_offset = static_cast<uint32_t>(values);

  kernels::ScoreParams& s = in.score;
  s.ring_first = in.ring_first;
  s.ring_capacity = in.ring_capacity;
  s.queries = c.queries;
  s.held = c.held;
  s.logit_stride = c.held + 3;
  s.heads_q = c.heads_q;
  s.heads_kv = c.heads_kv;
  s.head_dim = D;
  s.scale = static_cast<float>(1.0 / std::sqrt(double(D)));
  s.causal = 1;
  s.tag_mask = c.tag_mask ? 1u : 0u;
  s.bias = c.alibi ? kernels::kBiasAlibi : kernels::kBiasNone;
  s.ring_q_stride = c.heads_q * D;
  s.ring_pos_offset = static_cast<uint32_t>(ring_pos);
  s.ring_valid_offset = static_cast<uint32_t>(ring_valid);
  s.ring_tag_offset = static_cast<uint32_t>(ring_tag);
  s.kv_key_offset = 0;
  s.kv_key_stride = c.heads_kv * D;
  s.kv_pos_offset = static_cast<uint32_t>(kv_pos);
  s.kv_tag_offset = static_cast<uint32_t>(kv_tag);

  // Attend's logits: wide, so that the maximum matters; some -inf (masked).
  const uint32_t rows = c.queries * c.heads_q;
  in.logits.assign(uint64_t{rows} * s.logit_stride, std::numeric_limits<float>::quiet_NaN());
  std::uniform_int_distribution<uint32_t> tenth(0, 9);
  for (uint32_t row = 0; row < rows; ++row)
    for (uint32_t j = 0; j < c.held; ++j)
      in.logits[uint64_t{row} * s.logit_stride + j] =
          tenth(rng) == 0 || row % 11 == 5 ? -std::numeric_limits<float>::infinity() : 4.0f * normal(rng);
  in.list_count = c.lists == 2 ? c.held : std::min(kKeep, c.held + 2);
  if (c.lists != 2) {
    const uint32_t list_rows = c.lists == 1 ? c.queries : rows;
    std::uniform_int_distribution<uint32_t> slot(0, c.held - 1);
    for (uint32_t l = 0; l < list_rows; ++l)
      for (uint32_t r = 0; r < in.list_count; ++r) in.slots.push_back(r + 2 >= in.list_count ? kernels::kInvalid : slot(rng));
  }

  kernels::RetrieveParams& a = in.attend;
  a.queries = c.queries;
  a.heads_q = c.heads_q;
  a.heads_kv = c.heads_kv;
  a.head_dim = D;
  a.held = c.held;
  a.logit_stride = s.logit_stride;
  a.full = c.lists == 2 ? 1u : 0u;
  a.shared_lists = c.lists == 1 ? 1u : 0u;
  a.list_count = in.list_count;
  a.list_tiles = 1;
  a.list_keep = kKeep;
  a.kv_value_offset = value_offset;
  a.kv_value_stride = c.heads_kv * D;
  a.out_first_query = 2;  // the batch's rows start two queries into the outputs
  a.out_offset = 8;
  a.weight_offset = a.out_offset + (c.queries + 2) * c.heads_q * D + 5;
  a.weight_stride = in.list_count + 1;
  return in;
}

// The float64 logit of (query i, head h) at slot j; -inf where masked.
double want_logit(const Case& c, const Inputs& in, uint32_t i, uint32_t h, uint32_t j) {
  const uint32_t r = (in.ring_first + i) % in.ring_capacity, g = h / (c.heads_q / c.heads_kv), D = c.head_dim;
  if (!in.query_valid[r] || in.key_pos[j] > in.query_pos[r] || (c.tag_mask && in.key_tags[j] != in.query_tags[r]))
    return -INFINITY;
  double dot = 0.0;
  for (uint32_t d = 0; d < D; ++d)
    dot += double(in.q[(uint64_t{r} * c.heads_q + h) * D + d]) * double(in.k[(uint64_t{j} * c.heads_kv + g) * D + d]);
  const double bias = c.alibi ? -alibi_slope(h, c.heads_q) * std::abs(double(in.query_pos[r]) - in.key_pos[j]) : 0.0;
  return dot / std::sqrt(double(D)) + bias;
}

struct Buffers {
  vk::Buffer ring, kv, logits, lists, attention, usage;
};

void upload_into(Context& context, vk::Buffer& buffer, std::span<const uint32_t> words) {
  vk::Buffer staging = vk::Buffer::create(
      context, std::max<uint64_t>(4, words.size_bytes()), vk::MemoryIntent::upload, "tile staging").value_or_throw();
  std::memcpy(staging.mapped(), words.data(), words.size_bytes());
  test::run_once(context, [&](vk::CommandRecorder& rec) { rec.copy(staging, 0, buffer, 0, words.size_bytes()); });
}

// Scores and attends one case on `kernels` (built over `b`), then compares;
// returns the number of mismatches (the first few are printed).
uint32_t check_case(Context& context, const kernels::RetrieveKernels& kernels, Buffers& b, const Case& c,
                    MemoryStorage storage, std::mt19937_64& rng, std::vector<std::vector<uint32_t>>* attended) {
  const Inputs in = make_inputs(c, storage, rng);
  const kernels::ScoreParams& s = in.score;
  const kernels::RetrieveParams& a = in.attend;
  const uint32_t rows = c.queries * c.heads_q, D = c.head_dim;
  uint32_t bad = 0;
  auto fail = [&](const std::string& what) {
    if (bad++ < 5) FAIL_CHECK(what);
  };

  // Score: logits over NaN, the stride's padding left alone.
  upload_into(context, b.ring, in.ring_words);
  upload_into(context, b.kv, in.kv_words);
  const std::vector<uint32_t> nan(uint64_t{rows} * s.logit_stride, kNaN);
  upload_into(context, b.logits, nan);
  test::run_once(context, [&](vk::CommandRecorder& rec) { kernels.score(rec, s).or_throw(); });
  const std::vector<uint32_t> logits = test::download_words(context, b.logits, 0, nan.size());
  for (uint32_t i = 0; i < c.queries; ++i)
    for (uint32_t h = 0; h < c.heads_q; ++h)
      for (uint32_t j = 0; j < s.logit_stride; ++j) {
        const float got = test::bits_float(logits[(uint64_t{i} * c.heads_q + h) * s.logit_stride + j]);
        const std::string at = "logit (" + std::to_string(i) + ", " + std::to_string(h) + ", " + std::to_string(j) + ")";
        if (j >= c.held) {
          if (!std::isnan(got)) fail(at + " past the held slots was written");
          continue;
        }
        const double want = want_logit(c, in, i, h, j);
        const bool ok = std::isinf(want) ? std::isinf(got) && got < 0 : std::abs(got - want) <= 1e-5 * (1.0 + std::abs(want)) * 4;
        if (!ok) fail(at + ": expected " + std::to_string(want) + ", got " + std::to_string(got));
      }

  // Attend over the host's logits and lists.
  std::vector<uint32_t> logit_words(in.logits.size());
  for (size_t i = 0; i < in.logits.size(); ++i) logit_words[i] = test::float_bits(in.logits[i]);
  // Lists [row][tile 0][kKeep] x (key, tie, slot); only the slots are read.
  std::vector<uint32_t> list_words(std::max<size_t>(3, in.slots.size() / std::max(1u, in.list_count) * kKeep * 3), 0u);
  for (size_t i = 0; i < in.slots.size(); ++i) list_words[3 * (i / in.list_count * kKeep + i % in.list_count) + 2] = in.slots[i];
  upload_into(context, b.logits, logit_words);
  upload_into(context, b.lists, list_words);
  const uint64_t attention_words = a.weight_offset + uint64_t{rows} * a.weight_stride;
  upload_into(context, b.attention, std::vector<uint32_t>(attention_words, kNaN));
  test::run_once(context, [&](vk::CommandRecorder& rec) { kernels.attend(rec, a); });
  const std::vector<uint32_t> att = test::download_words(context, b.attention, 0, attention_words);
  if (attended) attended->push_back(att);
  for (uint32_t i = 0; i < c.queries; ++i)
    for (uint32_t h = 0; h < c.heads_q; ++h) {
      const uint32_t row = i * c.heads_q + h, g = h / (c.heads_q / c.heads_kv);
      std::vector<uint32_t> slot(in.list_count);
      std::vector<double> logit(in.list_count, -INFINITY);
      double top = -INFINITY, total = 0.0;
      for (uint32_t r = 0; r < in.list_count; ++r) {
        slot[r] = c.lists == 2 ? r : in.slots[uint64_t{c.lists == 1 ? i : row} * in.list_count + r];
        if (slot[r] != kernels::kInvalid) logit[r] = in.logits[uint64_t{row} * s.logit_stride + slot[r]];
        top = std::max(top, logit[r]);
      }
      for (uint32_t r = 0; r < in.list_count; ++r)
        if (!std::isinf(logit[r])) total += std::exp(logit[r] - top);
      std::vector<double> out(D, 0.0);
      for (uint32_t r = 0; r < in.list_count; ++r) {
        const double w = std::isinf(logit[r]) ? -1.0 : std::exp(logit[r] - top) / total;
        const float got = test::bits_float(att[a.weight_offset + uint64_t{row} * a.weight_stride + r]);
        if (!(std::abs(got - w) <= 1e-5 * std::abs(w) + 1e-7))
          fail("weight (" + std::to_string(row) + ", " + std::to_string(r) + "): expected " + std::to_string(w) + ", got " +
               std::to_string(got));
        if (w > 0)
          for (uint32_t d = 0; d < D; ++d) out[d] += w * in.v[(uint64_t{slot[r]} * c.heads_kv + g) * D + d];
      }
      for (uint32_t d = 0; d < D; ++d) {
        const float got = test::bits_float(att[a.out_offset + (uint64_t{a.out_first_query + i} * c.heads_q + h) * D + d]);
        if (!(std::abs(got - out[d]) <= 2e-5))
          fail("output (" + std::to_string(row) + ", " + std::to_string(d) + "): expected " + std::to_string(out[d]) +
               ", got " + std::to_string(got));
      }
    }
  for (uint64_t w = 0; w < a.out_offset + uint64_t{a.out_first_query} * c.heads_q * D; ++w)
    if (!std::isnan(test::bits_float(att[w]))) fail("word " + std::to_string(w) + " before the batch was written");
  return bad;
}

// Buffers for the largest case, and the kernels over them.
uint32_t check_cases(Context& context, const kernels::KernelPlan& plan, std::span<const Case> cases,
                     MemoryStorage storage, kernels::StoredPath path, std::mt19937_64& rng,
                     std::vector<std::vector<uint32_t>>* attended = nullptr) {
  uint64_t ring = 0, kv = 0, logits = 0, lists = 0, attention = 0, held = 0;
  for (const Case& c : cases) {
    std::mt19937_64 probe(0);
    const Inputs in = make_inputs(c, storage, probe);
    ring = std::max<uint64_t>(ring, in.ring_words.size());
    kv = std::max<uint64_t>(kv, in.kv_words.size());
    logits = std::max<uint64_t>(logits, in.logits.size());
    lists = std::max<uint64_t>(lists, uint64_t{c.queries} * c.heads_q * kKeep * 3);
    attention = std::max<uint64_t>(attention, in.attend.weight_offset + uint64_t{c.queries} * c.heads_q * in.attend.weight_stride);
    held = std::max<uint64_t>(held, c.held);
  }
  Buffers b{test::device_words(context, ring, 0, "tile ring"),        test::device_words(context, kv, 0, "tile kv"),
            test::device_words(context, logits, 0, "tile logits"),    test::device_words(context, lists, 0, "tile lists"),
            test::device_words(context, attention, 0, "tile outputs"), test::device_words(context, 64, 0, "tile usage")};
  vk::DescriptorArena arena(context);
  const kernels::RetrieveKernels kernels =
      kernels::RetrieveKernels::create(context, arena, plan,
                                       {{&b.ring}, {&b.kv}, {&b.logits}, {&b.lists}, {&b.attention}, {&b.usage}},
                                       static_cast<uint32_t>(held), kKeep, false, path)
          .value_or_throw();
  // fp32 memories: keys and values fetched as texels wherever the device
  // has texel buffers (suite_features_off: not).
  CHECK(kernels.texel() == (plan.direct && path == kernels::StoredPath::f32 && context.caps().texel_buffers));
  uint32_t bad = 0;
  for (const Case& c : cases) {
    INFO("heads " << c.heads_q << "/" << c.heads_kv << " D=" << c.head_dim << " held=" << c.held << " queries="
                  << c.queries << (c.tag_mask ? " tags" : "") << (c.alibi ? " alibi" : "") << " lists " << c.lists);
    bad += check_case(context, kernels, b, c, storage, rng, attended);
  }
  return bad;
}

}  // namespace

TEST_CASE("block kernels: the direct score and attend register tiles match the float64 reference") {
  std::mt19937_64 rng(2323);
  Context& context = test::gpu();
  kernels::KernelPlan device = kernels::plan_kernels(context.caps());
  device.direct = true;
  device.direct_attend = true;
  const uint32_t share = device.direct_share;  // 0 where shuffles are off: every tile unshared
  struct Tile {
    uint32_t rows, slots, share, workgroup, quads, attend_workgroup;
  };
  // The plan's own tiles first.
  const Tile tiles[] = {{device.direct_score_rows, device.direct_score_slots, share, device.direct_score_workgroup,
                         device.direct_attend_quads, device.direct_attend_workgroup},
                        {1, 1, 1, 32, 1, 5},
                        {3, 5, 1, 32, 3, 32},
                        {8, 2, share, 256, 16, 32},
                        {5, 3, share, 32, 16, 7},
                        {16, 1, 1, 64, 2, 32}};
  // Rows (queries x group) and slots off every tile above; head_dim 64 in
  // whole chunks, 40 in whole quads only, 13 scalar.
  const Case cases[] = {{8, 2, 64, 77, 5, false, false, 0},  {8, 1, 40, 65, 2, true, false, 1},
                        {4, 4, 13, 300, 3, false, true, 2}, {8, 2, 64, 260, 9, true, true, 0},
                        {2, 2, 96, 33, 4, false, false, 1}};
  const struct {
    MemoryStorage storage;
    kernels::StoredPath path;
  } memories[] = {{MemoryStorage::f32, kernels::StoredPath::f32},
                  {MemoryStorage::f16, kernels::stored_path(context.caps(), MemoryStorage::f16)},
                  {MemoryStorage::f16, kernels::StoredPath::f16_words}};
  for (size_t t = 0; t < std::size(tiles); ++t) {
    const Tile& tile = tiles[t];
    kernels::KernelPlan plan = device;
    plan.direct_share = tile.share;
    plan.direct_score_rows = tile.rows;
    plan.direct_score_slots = tile.slots;
    plan.direct_score_workgroup = tile.workgroup;
    plan.direct_attend_quads = tile.quads;
    plan.direct_attend_workgroup = tile.attend_workgroup;
    for (size_t at = 0; at < std::size(memories); ++at) {
      if (at > 0 && at != 1 + t % 2) continue;  // fp32 on every tile, the fp16 paths on alternate ones
      const auto& m = memories[at];
      INFO("tile " << tile.rows << " x " << tile.slots << ", share " << tile.share << ", W " << tile.workgroup
                   << ", attend quads " << tile.quads << " in " << tile.attend_workgroup << ", stored path "
                   << static_cast<int>(m.path));
      CHECK(check_cases(context, plan, cases, m.storage, m.path, rng) == 0);
    }
  }
  test::check_no_validation_messages(context);
}


// attend_direct.comp adds its sum of exponentials in attend.comp's order,
// so the two kernels' weights and outputs (every word of the attention
// buffer) are equal bit for bit: policies fed by the weights decide alike
// on either. Lists of 1 to 300 entries: fewer than attend.comp's lanes,
// and several rounds of them; the device's attend workgroup and tiny_gpu()'s.
TEST_CASE("block kernels: the direct attend equals the tiled attend bit for bit") {
  const Case cases[] = {{8, 2, 64, 77, 5, false, false, 0}, {8, 1, 40, 65, 2, true, false, 1},
                        {4, 4, 13, 300, 3, false, true, 2}, {8, 2, 64, 260, 9, true, true, 0},
                        {2, 2, 96, 1, 4, false, false, 2},  {2, 1, 64, 3, 2, false, false, 1}};
  for (Context* context : {&test::gpu(), &test::tiny_gpu()}) {
    kernels::KernelPlan plan = kernels::plan_kernels(context->caps());
    plan.direct = true;
    INFO("attend workgroup " << plan.attend_workgroup);
    std::vector<std::vector<uint32_t>> words[2];
    for (bool direct : {false, true}) {
      plan.direct_attend = direct;
      std::mt19937_64 rng(4242);  // the same inputs for both
      CHECK(check_cases(*context, plan, cases, MemoryStorage::f32, kernels::StoredPath::f32, rng, &words[direct]) == 0);
    }
    REQUIRE(words[0].size() == words[1].size());
    size_t differing = 0;
    for (size_t c = 0; c < words[0].size(); ++c)
      for (size_t w = 0; w < words[0][c].size(); ++w) differing += words[0][c][w] != words[1][c][w];
    CHECK(differing == 0);
    test::check_no_validation_messages(*context);
  }
}

// Score pipelines specialized for a memory's scoring features
// (kernels::score_features: what a pipeline leaves out folds away, the
// SCORE_FEATURES specialization constant) give the logits of the pipeline
// built for every feature bit for bit, direct and tiled; a call that needs
// a feature its pipeline lacks is refused by name, and nothing is recorded.
TEST_CASE("block kernels: score pipelines built for their scoring features equal the all-features build") {
  Context& context = test::gpu();
  struct Variant {
    Case c;
    float soft_cap;
    uint32_t window;
  };
  const Variant variants[] = {{{8, 2, 64, 77, 5, false, false, 0}, 0.0f, 0},
                              {{8, 2, 64, 77, 5, true, false, 0}, 0.0f, 0},
                              {{8, 1, 40, 65, 2, false, true, 0}, 0.0f, 0},
                              {{8, 2, 64, 260, 9, false, false, 0}, 3.0f, 0},
                              {{4, 4, 13, 300, 3, true, true, 0}, 2.5f, 200}};
  for (bool direct : {true, false}) {
    kernels::KernelPlan plan = kernels::plan_kernels(context.caps());
    plan.direct = direct;
    for (const Variant& v : variants) {
      std::mt19937_64 rng(777);
      Inputs in = make_inputs(v.c, MemoryStorage::f32, rng);
      in.score.soft_cap = v.soft_cap;
      in.score.window = v.window;
      const kernels::ScoreParams& s = in.score;
      const uint32_t needed = kernels::needed_score_features(s.bias, s.soft_cap, s.window, s.tag_mask);
      INFO(std::string(direct ? "direct" : "tiled") << ", features " << needed << ", D=" << v.c.head_dim << " held=" << v.c.held);
      Buffers b{test::device_words(context, in.ring_words.size(), 0, "features ring"),
                test::device_words(context, in.kv_words.size(), 0, "features kv"),
                test::device_words(context, in.logits.size(), 0, "features logits"),
                test::device_words(context, 64, 0, "features lists"), test::device_words(context, 64, 0, "features outputs"),
                test::device_words(context, 64, 0, "features usage")};
      upload_into(context, b.ring, in.ring_words);
      upload_into(context, b.kv, in.kv_words);
      vk::DescriptorArena arena(context);
      auto build = [&](uint32_t features) {
        return kernels::RetrieveKernels::create(context, arena, plan,
                                                {{&b.ring}, {&b.kv}, {&b.logits}, {&b.lists}, {&b.attention}, {&b.usage}},
                                                v.c.held, kKeep, false, kernels::StoredPath::f32, features)
            .value_or_throw();
      };
      std::vector<uint32_t> logits[2];
      for (int exact = 0; exact < 2; ++exact) {
        const kernels::RetrieveKernels k = build(exact ? needed : kernels::kScoreAllFeatures);
        const std::vector<uint32_t> nan(in.logits.size(), kNaN);
        upload_into(context, b.logits, nan);
        test::run_once(context, [&](vk::CommandRecorder& rec) { k.score(rec, s).or_throw(); });
        logits[exact] = test::download_words(context, b.logits, 0, nan.size());
      }
      size_t differing = 0, finite = 0;
      for (size_t i = 0; i < logits[0].size(); ++i) {
        differing += logits[0][i] != logits[1][i];
        finite += std::isfinite(test::bits_float(logits[0][i]));
      }
      CHECK(differing == 0);
      CHECK(finite >= logits[0].size() / 20);  // the comparison covers unmasked logits (causal, tags, window mask most)
      if (needed != 0) {
        const kernels::RetrieveKernels bare = build(0);
        bool recorded = false;
        test::run_once(context, [&](vk::CommandRecorder& rec) {
          const Status st = bare.score(rec, s);
          recorded = st.ok();
          if (!st.ok()) {
            CHECK(st.code() == ErrorCode::invalid_argument);
            CHECK(st.message().find("its pipeline was built without") != std::string::npos);
          }
        });
        CHECK_FALSE(recorded);
      }
    }
  }
  test::check_no_validation_messages(context);
}
