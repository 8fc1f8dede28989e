// Dense attention in one pass (flash_attend.comp + flash_combine.comp
// through kernels::FlashAttention) against a float64 softmax written here
// from spec 2.2-2.3 with K >= M: randomized rows and memories whose sizes
// cross the online-softmax block and the workgroup of rows, head_dim not a
// multiple of 4, GQA 8/2 and MHA 4/4 heads, fp32 and fp16 memories, causal
// and tag masks, invalid and fully masked queries, ALiBi, a Q ring that
// wraps, and slots split over workgroups by a loop limit (the device's, or
// a small one set on the plan), up to a memory of 70000 entries whose slot
// loop alone passes lavapipe's 65535 iterations.
#include "kernel_harness.hpp"
#include "support.hpp"

#include "core/half.hpp"
#include "interface/constants.h"
#include "kernels/flash.hpp"
#include "kernels/kernel_plan.hpp"

#include <attendre/config.hpp>

#include <doctest/doctest.h>

#include <chrono>
#include <cmath>
#include <limits>
#include <random>

using namespace attendre;

namespace {

struct FlashCase {
  uint32_t heads_q = 8, heads_kv = 2, head_dim = 8, held = 1, queries = 17;
  MemoryStorage storage = MemoryStorage::f32;
  bool causal = true, tag_mask = false, alibi = false;
  uint64_t seed = 1;
};

uint64_t align64(uint64_t words) { return (words + 63) / 64 * 64; }

// One section of floats as a memory stores them: fp32 words, or fp16 pairs
// (rounded here first, so that the reference sees the stored values).
struct Section {
  std::vector<float> values;  // as stored, back in fp32
  uint64_t words = 0;
};

Section stored_section(std::vector<float> values, MemoryStorage storage) {
  Section s;
  if (storage == MemoryStorage::f16)
    for (float& v : values) v = half::half_to_float(half::float_to_half(v));
  s.words = storage == MemoryStorage::f16 ? (values.size() + 1) / 2 : values.size();
  s.values = std::move(values);
  return s;
}

void write_section(std::vector<uint32_t>& words, uint64_t at, const Section& s, MemoryStorage storage) {
  for (size_t i = 0; i < s.values.size(); ++i) {
    if (storage == MemoryStorage::f16) {
      const uint32_t half = half::float_to_half(s.values[i]);
      words[at + i / 2] |= i % 2 == 0 ? half : half << 16;
    } else {
      words[at + i] = test::float_bits(s.values[i]);
    }
  }
}

// The inputs on the host, and the device buffers' words and offsets.
struct FlashInputs {
  Section q, k, v;  // q [ring row][heads_q][D], k and v [slot][heads_kv][D]
  std::vector<int32_t> query_positions, key_positions;
  std::vector<uint32_t> query_valid, query_tags, key_tags;
  uint32_t ring_capacity = 0, ring_first = 0;
  std::vector<uint32_t> ring_words, kv_words;
  kernels::FlashParams params{};
};

FlashInputs make_inputs(const FlashCase& c) {
  std::mt19937_64 rng(c.seed);
  std::normal_distribution<float> wide(0.0f, 3.0f), unit(0.0f, 1.0f);  // wide: the running max moves
  const uint32_t D = c.head_dim;
  FlashInputs in;
  in.ring_capacity = c.queries + 3;
  in.ring_first = c.queries + 1;  // the batch wraps around the ring's end
  std::vector<float> q(uint64_t{in.ring_capacity} * c.heads_q * D), k(uint64_t{c.held} * c.heads_kv * D),
      v(k.size());
  for (float& x : q) x = wide(rng);
  for (float& x : k) x = unit(rng);
  for (float& x : v) x = unit(rng);
  in.q = stored_section(std::move(q), c.storage);
  in.k = stored_section(std::move(k), c.storage);
  in.v = stored_section(std::move(v), c.storage);
  // Slots hold positions in no particular order; queries sit among them.
  std::uniform_int_distribution<int32_t> position(0, static_cast<int32_t>(2 * c.held + 8));
  for (uint32_t j = 0; j < c.held; ++j) {
    in.key_positions.push_back(position(rng) + 4);
    in.key_tags.push_back(j % 3);
  }
  for (uint32_t r = 0; r < in.ring_capacity; ++r) {
    const uint32_t i = (r + in.ring_capacity - in.ring_first % in.ring_capacity) % in.ring_capacity;  // batch index
    in.query_positions.push_back(i % 7 == 3 ? 0 : position(rng) + 4);  // position 0: nothing to attend under causal
    in.query_valid.push_back(i % 5 == 4 ? 0u : 1u);
    in.query_tags.push_back(i % 3);
  }

  const uint64_t ring_pos = align64(in.q.words), ring_valid = ring_pos + align64(in.ring_capacity),
                 ring_tag = ring_valid + align64(in.ring_capacity);
  in.ring_words.assign(ring_tag + in.ring_capacity, 0u);
  write_section(in.ring_words, 0, in.q, c.storage);
  for (uint32_t r = 0; r < in.ring_capacity; ++r) {
    in.ring_words[ring_pos + r] = static_cast<uint32_t>(in.query_positions[r]);
    in.ring_words[ring_valid + r] = in.query_valid[r];
    in.ring_words[ring_tag + r] = in.query_tags[r];
  }
  const uint64_t values = align64(in.k.words), kv_pos = values + align64(in.v.words),
                 kv_tag = kv_pos + align64(c.held);
  in.kv_words.assign(kv_tag + c.held, 0u);
  write_section(in.kv_words, 0, in.k, c.storage);
  write_section(in.kv_words, values, in.v, c.storage);
  for (uint32_t j = 0; j < c.held; ++j) {
    in.kv_words[kv_pos + j] = static_cast<uint32_t>(in.key_positions[j]);
    in.kv_words[kv_tag + j] = in.key_tags[j];
  }

  kernels::FlashParams& p = in.params;
  p.ring_first = in.ring_first;
  p.ring_capacity = in.ring_capacity;
  p.queries = c.queries;
  p.held = c.held;
  p.heads_q = c.heads_q;
  p.heads_kv = c.heads_kv;
  p.scale = static_cast<float>(1.0 / std::sqrt(double(D)));
  p.causal = c.causal ? 1u : 0u;
  p.tag_mask = c.tag_mask ? 1u : 0u;
  p.bias = c.alibi ? kernels::kBiasAlibi : kernels::kBiasNone;
  p.ring_q_stride = c.heads_q * D;
  p.ring_pos_offset = static_cast<uint32_t>(ring_pos);
  p.ring_valid_offset = static_cast<uint32_t>(ring_valid);
  p.ring_tag_offset = static_cast<uint32_t>(ring_tag);
  p.kv_key_offset = 0;
  p.kv_key_stride = c.heads_kv * D;
  p.kv_value_offset = static_cast<uint32_t>(values);
  p.kv_value_stride = c.heads_kv * D;
  p.kv_pos_offset = static_cast<uint32_t>(kv_pos);
  p.kv_tag_offset = static_cast<uint32_t>(kv_tag);
  p.out_first_query = 2;  // the batch's rows start two queries into the output buffer
  p.out_offset = 8;
  p.lse_offset = p.out_offset + (c.queries + 2) * c.heads_q * D;
  return in;
}

// o[query][h][d] and the log-sum-exp [query][h] in float64, from spec
// 2.2-2.3: softmax over the unmasked entries, 0 and -inf where none is.
struct Expected {
  std::vector<double> outputs, lse;
};

Expected reference_attention(const FlashCase& c, const FlashInputs& in) {
  const uint32_t D = c.head_dim, group = c.heads_q / c.heads_kv;
  const double scale = 1.0 / std::sqrt(double(D));
  Expected e;
  e.outputs.assign(uint64_t{c.queries} * c.heads_q * D, 0.0);
  e.lse.assign(uint64_t{c.queries} * c.heads_q, -std::numeric_limits<double>::infinity());
  for (uint32_t i = 0; i < c.queries; ++i) {
    const uint32_t r = (in.ring_first + i) % in.ring_capacity;
    for (uint32_t h = 0; h < c.heads_q; ++h) {
      const uint32_t g = h / group;
      std::vector<double> logit;
      std::vector<uint32_t> slots;
      for (uint32_t j = 0; j < c.held; ++j) {
        if (!in.query_valid[r]) continue;
        if (c.causal && in.key_positions[j] > in.query_positions[r]) continue;
        if (c.tag_mask && in.key_tags[j] != in.query_tags[r]) continue;
        double dot = 0.0;
        for (uint32_t d = 0; d < D; ++d)
          dot += double(in.q.values[(uint64_t{r} * c.heads_q + h) * D + d]) *
                 double(in.k.values[(uint64_t{j} * c.heads_kv + g) * D + d]);
        double bias = 0.0;
        if (c.alibi) bias = -alibi_slope(h, c.heads_q) * std::abs(double(in.query_positions[r]) - in.key_positions[j]);
        logit.push_back(scale * dot + bias);
        slots.push_back(j);
      }
      if (logit.empty()) continue;
      double top = -INFINITY, total = 0.0;
      for (double l : logit) top = std::max(top, l);
      for (double l : logit) total += std::exp(l - top);
      e.lse[uint64_t{i} * c.heads_q + h] = top + std::log(total);
      for (size_t n = 0; n < slots.size(); ++n) {
        const double w = std::exp(logit[n] - top) / total;
        for (uint32_t d = 0; d < D; ++d)
          e.outputs[(uint64_t{i} * c.heads_q + h) * D + d] +=
              w * double(in.v.values[(uint64_t{slots[n]} * c.heads_kv + g) * D + d]);
      }
    }
  }
  return e;
}

// How a case ran: the splits of its slots and the lanes of each row.
struct FlashRun {
  uint32_t splits = 0, lanes = 0;
};

// Runs the case on `plan` and compares; returns how it ran.
FlashRun check_run(Context& context, const kernels::KernelPlan& plan, const FlashCase& c) {
  const std::string label = "heads " + std::to_string(c.heads_q) + "/" + std::to_string(c.heads_kv) +
                            " D=" + std::to_string(c.head_dim) + " held=" + std::to_string(c.held) +
                            " queries=" + std::to_string(c.queries) +
                            (c.storage == MemoryStorage::f16 ? " f16" : " f32") + (c.causal ? " causal" : "") +
                            (c.tag_mask ? " tags" : "") + (c.alibi ? " alibi" : "") + " loop limit " +
                            std::to_string(plan.max_loop_iterations);
  INFO(label);
  const FlashInputs in = make_inputs(c);
  const Expected want = reference_attention(c, in);
  // Partials sized as the stack sizes them, for one lane per row (lane
  // rows split the slots less often).
  const kernels::FlashSplits splits = kernels::flash_splits(plan, c.head_dim, c.held).value_or_throw();
  const kernels::FlashParams& p = in.params;
  const uint64_t out_words = p.lse_offset + uint64_t{c.queries + 2} * c.heads_q;
  vk::Buffer ring = test::upload_words(context, in.ring_words, "flash ring");
  vk::Buffer kv = test::upload_words(context, in.kv_words, "flash kv");
  // NaN everywhere first: a row the kernels skip cannot pass for a zero.
  vk::Buffer out = test::device_words(context, out_words, 0x7FC00000u, "flash outputs");
  vk::Buffer partials = test::device_words(context, std::max<uint64_t>(1, splits.partial_words(c.queries, c.heads_q)),
                                           0x7FC00000u, "flash partials");
  vk::DescriptorArena arena(context);
  const kernels::FlashAttention flash(kernels::FlashAttention::create(
                                          context, arena, plan, {{&ring}, {&kv}, {&out}, {&partials}}, c.head_dim,
                                          kernels::stored_path(context.caps(), c.storage))
                                          .value_or_throw());
  // The direct build over fp32 memories fetches keys and values as texels
  // wherever the device has texel buffers (suite_features_off: not).
  CHECK(flash.texel() == (plan.direct && c.storage == MemoryStorage::f32 && context.caps().texel_buffers));
  FlashRun run;
  run.lanes = flash.lanes_for(c.queries, c.heads_q, c.heads_kv);
  run.splits = kernels::flash_splits(plan, c.head_dim, c.held, run.lanes).value_or_throw().splits;
  CHECK(run.splits <= splits.splits);
  test::run_once(context, [&](vk::CommandRecorder& rec) { flash.record(rec, p).or_throw(); });
  const std::vector<uint32_t> got = test::download_words(context, out, 0, out_words);

  double v_scale = 0.0;
  for (float x : in.v.values) v_scale = std::max(v_scale, double(std::abs(x)));
  uint32_t mismatches = 0;
  for (uint64_t i = 0; i < want.outputs.size(); ++i) {
    const float o = test::bits_float(got[p.out_offset + uint64_t{p.out_first_query} * c.heads_q * c.head_dim + i]);
    if (!(std::abs(double(o) - want.outputs[i]) <= 2e-5 + 1e-4 * v_scale) && mismatches++ < 5)
      FAIL_CHECK("output " << i << ": expected " << want.outputs[i] << ", got " << o);
  }
  for (uint64_t i = 0; i < want.lse.size(); ++i) {
    const float lse = test::bits_float(got[p.lse_offset + uint64_t{p.out_first_query} * c.heads_q + i]);
    const bool ok = std::isinf(want.lse[i]) ? std::isinf(lse) && lse < 0
                                            : std::abs(double(lse) - want.lse[i]) <= 1e-4 * (1.0 + std::abs(want.lse[i]));
    if (!ok && mismatches++ < 5) FAIL_CHECK("log-sum-exp " << i << ": expected " << want.lse[i] << ", got " << lse);
  }
  CHECK(mismatches == 0);
  // The rows before and after the batch stay untouched.
  for (uint64_t i = 0; i < p.out_offset + uint64_t{p.out_first_query} * c.heads_q * c.head_dim; ++i)
    CHECK_MESSAGE(std::isnan(test::bits_float(got[i])), "word " << i << " outside the batch was written");
  return run;
}

uint32_t check_case(Context& context, const kernels::KernelPlan& plan, const FlashCase& c) {
  return check_run(context, plan, c).splits;
}

kernels::KernelPlan plan_of(Context& context) { return kernels::plan_kernels(context.caps()); }

}  // namespace

TEST_CASE("flash attention: matches the float64 softmax across block and workgroup boundaries") {
  Context& context = test::gpu();
  const kernels::KernelPlan plan = plan_of(context);
  const uint32_t B = plan.flash_block_for(8);
  uint64_t seed = 10;
  // 17 queries x 4 heads per group = 68 rows: two workgroups of 64 rows.
  for (uint32_t held : {1u, B - 1, B, B + 1, 3 * B + 5}) {
    if (held == 0) continue;
    FlashCase c;
    c.held = held;
    c.seed = ++seed;
    check_case(context, plan, c);
  }
  FlashCase decoding;  // one query (a decoding step): 4 of a workgroup's 64 rows walk the slots
  decoding.queries = 1;
  decoding.held = 3 * B + 5;
  decoding.seed = ++seed;
  check_case(context, plan, decoding);
  FlashCase tags;  // tag mask and ALiBi, no causal mask
  tags.held = 2 * B + 3;
  tags.causal = false;
  tags.tag_mask = tags.alibi = true;
  tags.seed = ++seed;
  check_case(context, plan, tags);
  for (MemoryStorage storage : {MemoryStorage::f32, MemoryStorage::f16}) {
    FlashCase mha;  // MHA, head_dim not a multiple of 4: the scalar reads
    mha.heads_q = mha.heads_kv = 4;
    mha.head_dim = 6;
    mha.held = 2 * B + 1;
    mha.storage = storage;
    mha.seed = ++seed;
    check_case(context, plan, mha);
    FlashCase wide;  // the base shape's head_dim and heads over a few hundred slots
    wide.head_dim = 64;
    wide.held = 300;
    wide.queries = 9;
    wide.storage = storage;
    wide.seed = ++seed;
    check_case(context, plan, wide);
  }
  test::check_no_validation_messages(context);
}

TEST_CASE("flash attention: tiny limits (32 invocations, 1 KiB of tiles) and head_dim 13") {
  Context& context = test::tiny_gpu();
  const kernels::KernelPlan plan = plan_of(context);
  CHECK(plan.flash_block_for(64) < plan.flash_block);  // the tiles shrank to fit
  uint64_t seed = 40;
  for (uint32_t D : {13u, 64u}) {
    FlashCase c;
    c.head_dim = D;
    c.held = 3 * plan.flash_block_for(D) + 1;
    c.queries = 11;  // 44 rows: two workgroups of 32
    c.storage = D == 13 ? MemoryStorage::f16 : MemoryStorage::f32;
    c.seed = ++seed;
    check_case(context, plan, c);
  }
  test::check_no_validation_messages(context);
}

TEST_CASE("flash attention: slots split by the loop limit are merged by flash_combine") {
  Context& context = test::gpu();
  kernels::KernelPlan plan = plan_of(context);
  plan.max_loop_iterations = 1500;  // a few blocks per invocation on any device
  uint64_t seed = 60;
  for (bool causal : {true, false}) {
    FlashCase c;
    c.held = 700;
    c.causal = causal;  // causal: early queries' later splits hold no unmasked entry
    c.seed = ++seed;
    CHECK(check_case(context, plan, c) > 3);
  }
  FlashCase f16;
  f16.heads_q = f16.heads_kv = 4;
  f16.head_dim = 6;
  f16.held = 500;
  f16.storage = MemoryStorage::f16;
  f16.seed = ++seed;
  CHECK(check_case(context, plan, f16) > 3);
  plan.max_loop_iterations = 20;  // not one block fits
  CHECK(kernels::flash_max_chunk(plan, 64).status().code() == ErrorCode::unsupported);
  test::check_no_validation_messages(context);
}

TEST_CASE("flash attention: 70000 entries, past lavapipe's 65535 loop iterations") {
  Context& context = test::gpu();
  const kernels::KernelPlan plan = plan_of(context);
  FlashCase c;
  c.heads_q = 4;
  c.heads_kv = 2;
  c.head_dim = 8;
  c.held = 70000;
  c.queries = 3;
  c.seed = 80;
  // One lane per row (6 rows per K/V head would take lane rows, which walk
  // 1/flash_lanes of the slots each).
  kernels::KernelPlan one_lane = plan;
  one_lane.flash_lanes = 0;
  const uint32_t splits = check_case(context, one_lane, c);
  if (context.caps().max_loop_iterations > 0) CHECK(splits > 1);
  check_case(context, plan, c);
  test::check_no_validation_messages(context);
}

TEST_CASE("flash attention: decoding's rows over subgroup lanes (KernelPlan::flash_lanes) and one lane per row") {
  Context& context = test::gpu();
  const kernels::KernelPlan plan = plan_of(context);
  kernels::KernelPlan one_lane = plan;
  one_lane.flash_lanes = 0;
  const uint32_t L = plan.flash_lanes;
  if (L <= 1) MESSAGE("this device has no lane rows (a GPU, or no subgroup shuffles): one lane per row only");
  const uint32_t B = plan.flash_block_for(8);
  uint64_t seed = 100;
  std::vector<FlashCase> cases;
  // MHA: one row per K/V head; slots fewer than the lanes, and across the
  // lanes' blocks (lane i walks slots i, i + L, ...).
  for (uint32_t held : {1u, std::max(L, 2u) - 1, std::max(L, 1u) * B + 1, 3 * std::max(L, 1u) * B + 5}) {
    FlashCase c;
    c.heads_q = c.heads_kv = 4;
    c.held = held;
    c.queries = 1;
    cases.push_back(c);
  }
  FlashCase smollm;  // SmolLM-135M's heads 9/3 at head_dim 64
  smollm.heads_q = 9;
  smollm.heads_kv = 3;
  smollm.head_dim = 64;
  smollm.held = 300;
  smollm.queries = 1;
  cases.push_back(smollm);
  FlashCase wide_group;  // 8 heads per K/V head, head_dim 6 (the scalar reads): the workgroup's 64 lanes
  wide_group.heads_q = 8;
  wide_group.heads_kv = 1;
  wide_group.head_dim = 6;
  wide_group.held = 2 * std::max(L, 1u) * B + 3;
  wide_group.queries = 1;
  cases.push_back(wide_group);
  FlashCase two = wide_group;  // two queries of 4 heads per group, tags and ALiBi, no causal mask
  two.heads_q = 8;
  two.heads_kv = 2;
  two.head_dim = 8;
  two.queries = 2;
  two.causal = false;
  two.tag_mask = two.alibi = true;
  cases.push_back(two);
  for (FlashCase c : cases) {
    c.seed = ++seed;
    const FlashRun lanes = check_run(context, plan, c);
    CHECK(lanes.lanes == std::max(L, 1u));  // every case here is a few rows per K/V head
    CHECK(check_run(context, one_lane, c).lanes == 1);
  }
  FlashCase batch;  // 17 queries x 4 heads per group: one row per invocation
  batch.held = 40;
  batch.seed = ++seed;
  CHECK(check_run(context, plan, batch).lanes == 1);
  // Split by a loop limit as well: each split's lanes merge, then flash_combine.
  kernels::KernelPlan limited = plan;
  limited.max_loop_iterations = 1500;
  FlashCase split = smollm;
  split.head_dim = 8;
  split.held = 5000;
  split.seed = ++seed;
  const FlashRun run = check_run(context, limited, split);
  CHECK(run.lanes == std::max(L, 1u));
  CHECK(run.splits > 1);
  test::check_no_validation_messages(context);
}
