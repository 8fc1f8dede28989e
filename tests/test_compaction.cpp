// The compaction kernel (insert_plan.comp through kernels::InsertKernels)
// in isolation: given a victim list, `held`, M and the chunk's valid flags,
// surviving rows take, in chunk order (std::stable_partition), first the
// never-used tail [held, M), then the slots of the evicted held entries in
// victim-list order; every other row gets kInvalid. Then the whole insertion
// (victim select -> plan -> evict_copy -> insert_scatter, or insert_direct's
// one dispatch on CPU devices) against a host model.
#include "kernel_harness.hpp"
#include "support.hpp"

#include "kernels/kernel_plan.hpp"
#include "interface/constants.h"
#include "kernels/insert.hpp"

#include <attendre/diagnostics.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <cstdlib>
#include <numeric>
#include <random>
#include <sstream>

using namespace attendre;

namespace {

constexpr uint32_t kInvalid = kernels::kInvalid;
constexpr uint32_t kNewRow = kernels::kNewRow;

// "" when equal, else the first differing row.
std::string first_mismatch(const std::vector<uint32_t>& expected, const std::vector<uint32_t>& actual,
                           const char* what = "row") {
  if (expected.size() != actual.size()) return "sizes differ";
  for (size_t i = 0; i < expected.size(); ++i)
    if (expected[i] != actual[i]) {
      std::ostringstream s;
      s << what << " " << i << ": expected 0x" << std::hex << expected[i] << ", got 0x" << actual[i];
      return s.str();
    }
  return "";
}

// ---------------------------------------------------------------------------
// insert_plan alone.

struct PlanInputs {
  uint32_t rows = 0, held = 0, capacity = 0;
  std::vector<uint8_t> valid;
  std::vector<uint32_t> victims;  // payloads: held slot or kNewRow | row
};

enum class Order { right, freed_reversed, freed_first };

// The planned slot of every row; `order` other than right builds the
// deliberately wrong plans the comparison must reject.
std::vector<uint32_t> expected_plan(const PlanInputs& in, Order order = Order::right) {
  std::vector<bool> dropped(in.rows, false);
  std::vector<uint32_t> freed;
  for (uint32_t v : in.victims) {
    if (v & kNewRow) dropped[v & ~kNewRow] = true;
    else freed.push_back(v);
  }
  std::vector<uint32_t> tail(in.capacity - in.held);
  std::iota(tail.begin(), tail.end(), in.held);
  if (order == Order::freed_reversed) std::reverse(freed.begin(), freed.end());
  std::vector<uint32_t> free_slots = order == Order::freed_first ? freed : tail;
  const std::vector<uint32_t>& second = order == Order::freed_first ? tail : freed;
  free_slots.insert(free_slots.end(), second.begin(), second.end());

  std::vector<uint32_t> order_rows(in.rows);
  std::iota(order_rows.begin(), order_rows.end(), 0u);
  auto survives = [&](uint32_t r) { return in.valid[r] != 0 && !dropped[r]; };
  const auto end = std::stable_partition(order_rows.begin(), order_rows.end(), survives);
  std::vector<uint32_t> slot(in.rows, kInvalid);
  const size_t survivors = static_cast<size_t>(end - order_rows.begin());
  REQUIRE(survivors <= free_slots.size());  // the inputs are a feasible insertion
  for (size_t i = 0; i < survivors; ++i) slot[order_rows[i]] = free_slots[i];
  return slot;
}

enum class Mix { none, held_only, new_only, mixed, all_rows, full_memory };

const char* to_string(Mix m) {
  switch (m) {
    case Mix::none: return "no victims";
    case Mix::held_only: return "held victims";
    case Mix::new_only: return "new-row victims";
    case Mix::mixed: return "mixed victims";
    case Mix::all_rows: return "every valid row evicted";
    case Mix::full_memory: return "full memory";
  }
  return "";
}

// A feasible insertion: evictions E = held + fresh - M when positive, split
// into new-row and held victims, listed in random order; without evictions
// the tail may be larger than the survivors.
PlanInputs make_plan_inputs(uint32_t rows, Mix mix, std::mt19937_64& rng) {
  PlanInputs in;
  in.rows = rows;
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  const double invalid = mix == Mix::full_memory ? 0.0 : 0.2;
  for (uint32_t r = 0; r < rows; ++r) in.valid.push_back(unit(rng) < invalid ? 0 : 1);
  std::vector<uint32_t> valid_rows;
  for (uint32_t r = 0; r < rows; ++r)
    if (in.valid[r]) valid_rows.push_back(r);
  std::shuffle(valid_rows.begin(), valid_rows.end(), rng);
  const uint32_t fresh = static_cast<uint32_t>(valid_rows.size());
  auto pick = [&](uint32_t lo, uint32_t hi) { return hi <= lo ? lo : lo + static_cast<uint32_t>(rng() % (hi - lo + 1)); };

  in.held = pick(0, 3 * rows + 5);
  uint32_t nv = 0, hv = 0;
  switch (mix) {
    case Mix::none: break;
    case Mix::held_only: hv = pick(1, std::min(in.held, fresh)); break;
    case Mix::new_only: nv = pick(1, fresh); break;
    case Mix::mixed:
      nv = pick(1, fresh / 2);
      hv = pick(1, std::min(in.held, fresh - nv));
      break;
    case Mix::all_rows: nv = fresh; break;
    case Mix::full_memory:  // every row valid, as many victims as rows (up to kMaxChunk)
      in.held = std::max(in.held, rows);
      nv = pick(0, fresh / 2);
      hv = fresh - nv;
      break;
  }
  nv = std::min(nv, fresh);
  hv = std::min({hv, in.held, fresh - nv});
  const uint32_t survivors = fresh - nv;
  // With evictions the free slots exactly fit the survivors; without, slack.
  const uint32_t tail = nv + hv > 0 ? survivors - hv : survivors + pick(0, 7);
  in.capacity = in.held + tail;

  std::vector<uint32_t> slots(in.held);
  std::iota(slots.begin(), slots.end(), 0u);
  std::shuffle(slots.begin(), slots.end(), rng);
  for (uint32_t i = 0; i < hv; ++i) in.victims.push_back(slots[i]);
  for (uint32_t i = 0; i < nv; ++i) in.victims.push_back(kNewRow | valid_rows[i]);
  std::shuffle(in.victims.begin(), in.victims.end(), rng);
  return in;
}

struct Sensitivity {
  uint32_t order_sensitive = 0;
  void note(const PlanInputs& in, const std::vector<uint32_t>& expected, const std::vector<uint32_t>& actual) {
    for (Order wrong : {Order::freed_reversed, Order::freed_first}) {
      const std::vector<uint32_t> plan = expected_plan(in, wrong);
      if (plan == expected) continue;
      ++order_sensitive;
      CHECK_MESSAGE(!first_mismatch(plan, actual).empty(), "the comparison must reject a wrong free-slot order");
    }
  }
};

const char* to_string(kernels::ScanBuild scans) {
  switch (scans) {
    case kernels::ScanBuild::subgroup_arithmetic: return "subgroup arithmetic";
    case kernels::ScanBuild::subgroup_ballot: return "subgroup ballot";
    case kernels::ScanBuild::shared_memory: return "shared memory";
  }
  return "";
}

// Runs insert_plan with workgroup `workgroup` on `in`, its scans built by
// `scans`, and checks every placement, and that no other chunk word changed.
void check_plan(Context& context, vk::DescriptorArena& arena, uint32_t workgroup, kernels::ScanBuild scans,
                const PlanInputs& in, Sensitivity& sensitivity) {
  kernels::KernelPlan plan = kernels::plan_kernels(context.caps());
  plan.insert_workgroup = workgroup;
  plan.insert_scans = scans;
  INFO("rows " << in.rows << ", held " << in.held << ", M " << in.capacity << ", victims " << in.victims.size()
               << ", workgroup " << workgroup << ", scans " << std::string(to_string(scans)));

  // Victim list: tile 0 of row 0, (key, tie, payload). Keys and ties are
  // noise (the plan reads payloads only); entries past `victims` name
  // surviving rows and held slots, which the plan must not read.
  std::vector<uint32_t> lists;
  std::mt19937 noise(static_cast<uint32_t>(in.rows * 31 + in.victims.size()));
  auto word = [&] { return static_cast<uint32_t>(noise()); };
  for (uint32_t v : in.victims) lists.insert(lists.end(), {word(), word(), v});
  for (uint32_t r = 0; r < std::min<uint32_t>(in.rows, 8); ++r) lists.insert(lists.end(), {0u, 0u, kNewRow | r});
  for (uint32_t s = 0; s < std::min<uint32_t>(in.held, 8); ++s) lists.insert(lists.end(), {0u, 0u, s});
  lists.push_back(0u);  // never empty
  // InsertKernels also binds score_stats' partials at the start of the lists.
  if (lists.size() < kernels::stats_partial_words(plan, in.capacity))
    lists.resize(kernels::stats_partial_words(plan, in.capacity), 0u);

  const uint32_t valid_off = 5, place_off = valid_off + in.rows + 3;
  std::vector<uint32_t> chunk(place_off + in.rows + 6, 0x5EED0000u);
  for (uint32_t r = 0; r < in.rows; ++r) chunk[valid_off + r] = in.valid[r] ? 1u + (r % 3) : 0u;  // any nonzero is valid
  for (uint32_t r = 0; r < in.rows; ++r) chunk[place_off + r] = 0xDEADBEEFu;

  const vk::Buffer list_buffer = test::upload_words(context, lists, "test victims");
  const vk::Buffer chunk_buffer = test::upload_words(context, chunk, "test chunk");
  const vk::Buffer kv = test::device_words(context, 64, 0u, "test kv");
  kernels::InsertConstants constants{};
  constants.capacity = in.capacity;
  constants.rows = in.rows;
  constants.chunk_valid_offset = valid_off;
  constants.chunk_place_offset = place_off;
  const kernels::InsertKernels insert =
      kernels::InsertKernels::create(context, arena, plan, {{&kv}, {&chunk_buffer}, {&list_buffer}, {}}, constants)
          .value_or_throw();
  const kernels::InsertParams p{in.held, static_cast<uint32_t>(in.victims.size())};
  test::run_once(context, [&](vk::CommandRecorder& rec) { insert.plan(rec, p); });
  const std::vector<uint32_t> after = test::download_words(context, chunk_buffer, 0, chunk.size());

  const std::vector<uint32_t> actual(after.begin() + place_off, after.begin() + place_off + in.rows);
  const std::vector<uint32_t> expected = expected_plan(in);
  const std::string mismatch = first_mismatch(expected, actual);
  CHECK_MESSAGE(mismatch.empty(), mismatch);
  std::vector<uint32_t> untouched = after;
  std::copy(chunk.begin() + place_off, chunk.begin() + place_off + in.rows, untouched.begin() + place_off);
  CHECK_MESSAGE(untouched == chunk, "insert_plan wrote outside the placement section");
  sensitivity.note(in, expected, actual);
}

// Every scan build the device can run: the plan's choice and the fallbacks
// below it.
std::vector<kernels::ScanBuild> scan_builds(const Context& context) {
  std::vector<kernels::ScanBuild> builds;
  if (context.caps().subgroup_arithmetic) builds.push_back(kernels::ScanBuild::subgroup_arithmetic);
  if (context.caps().subgroup_ballot) builds.push_back(kernels::ScanBuild::subgroup_ballot);
  builds.push_back(kernels::ScanBuild::shared_memory);
  return builds;
}

void check_plan_sizes(Context& context, std::initializer_list<uint32_t> workgroups) {
  vk::DescriptorArena arena(context);
  std::mt19937_64 rng(4242);
  Sensitivity sensitivity;
  for (uint32_t rows : {1u, 2u, 255u, 256u, 257u, kernels::kMaxChunk})
    for (Mix mix : {Mix::none, Mix::held_only, Mix::new_only, Mix::mixed, Mix::all_rows, Mix::full_memory}) {
      INFO(to_string(mix));
      const PlanInputs in = make_plan_inputs(rows, mix, rng);
      for (uint32_t w : workgroups)
        for (kernels::ScanBuild scans : scan_builds(context)) check_plan(context, arena, w, scans, in, sensitivity);
    }
  // Nothing held, tail only.
  PlanInputs empty = make_plan_inputs(257, Mix::none, rng);
  empty.capacity -= empty.held;
  empty.held = 0;
  for (uint32_t w : workgroups)
    for (kernels::ScanBuild scans : scan_builds(context)) check_plan(context, arena, w, scans, empty, sensitivity);
  CHECK(sensitivity.order_sensitive > 0);
  test::check_no_validation_messages(context);
}

// ---------------------------------------------------------------------------
// The whole insertion: select victims, plan, copy out, scatter.

struct Memory {
  uint32_t capacity = 0, kv_row = 0;
  std::vector<uint32_t> keys, values;  // [slot][kv_row] float bits
  std::vector<int32_t> positions;
  std::vector<uint32_t> scores, tags;
};

struct InsertCase {
  uint32_t capacity, held, rows, n_sink;
  bool protect_new;
  uint32_t policy;
};

// The insertion's kernels: select, plan, evict_copy and scatter, or
// insert_direct (select, plan and scatter in one dispatch, no copy-out).
enum class InsertPath { kernels, direct };

// Returns whether the insertion ran (a draw may be infeasible, and the
// direct path takes only insertions with victims that fit one segment).
bool check_insertion(Context& context, vk::DescriptorArena& arena, const InsertCase& c, std::mt19937_64& rng,
                     InsertPath path = InsertPath::kernels) {
  const kernels::KernelPlan plan = kernels::plan_kernels(context.caps());
  const uint32_t M = c.capacity, H = c.held, S = c.rows, D = 5;  // D: words per key or value row
  const bool int_scores = c.policy <= kernels::kPolicyLfu;
  INFO("M " << M << ", held " << H << ", rows " << S << ", n_sink " << c.n_sink << ", protect_new " << c.protect_new
            << ", policy " << c.policy);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  std::uniform_real_distribution<double> unit(0.0, 1.0);

  // Held entries: distinct positions below the chunk's, scores with ties.
  test::EvictInputs in;
  in.n_sink = c.n_sink;
  in.new_rows = c.protect_new ? 0 : S;
  in.policy = c.policy;
  in.int_scores = int_scores;
  in.init_bits = test::float_bits(0.5f);
  std::vector<int32_t> pool(2 * H + 4);
  std::iota(pool.begin(), pool.end(), 0);
  std::shuffle(pool.begin(), pool.end(), rng);
  in.held_positions.assign(pool.begin(), pool.begin() + H);
  for (uint32_t i = 0; i < H; ++i)
    in.held_scores.push_back(int_scores ? static_cast<uint32_t>(rng() % 4) : test::float_bits(0.5f * float(rng() % 4)));
  int32_t next_position = static_cast<int32_t>(2 * H + 4);
  for (uint32_t r = 0; r < S; ++r) {
    in.row_positions.push_back(next_position);
    next_position += 1 + static_cast<int32_t>(rng() % 2);
    in.row_valid.push_back(unit(rng) < 0.8 ? 1 : 0);
  }

  // Buffers, each section at its own odd offset.
  const uint32_t kv_keys = 3, kv_values = kv_keys + M * D + 1, kv_pos = kv_values + M * D + 2, kv_scores = kv_pos + M + 1,
                 kv_tags = kv_scores + M + 3, kv_words = kv_tags + M + 2;
  std::vector<uint32_t> kv(kv_words, 0x0BADF00Du);
  for (uint32_t s = 0; s < H; ++s) {
    for (uint32_t d = 0; d < D; ++d) {
      kv[kv_keys + s * D + d] = test::float_bits(uniform(rng));
      kv[kv_values + s * D + d] = test::float_bits(uniform(rng));
    }
    kv[kv_pos + s] = static_cast<uint32_t>(in.held_positions[s]);
    kv[kv_scores + s] = in.held_scores[s];
    kv[kv_tags + s] = static_cast<uint32_t>(rng() % 7);
  }
  const uint32_t ch_keys = 1, ch_values = ch_keys + S * D + 2, ch_pos = ch_values + S * D + 1, ch_valid = ch_pos + S + 2,
                 ch_tags = ch_valid + S + 1, ch_init = ch_tags + S + 3, ch_place = ch_init + 2, ch_words = ch_place + S + 1;
  std::vector<uint32_t> chunk(ch_words, 0x0BADF00Du);
  for (uint32_t r = 0; r < S; ++r) {
    for (uint32_t d = 0; d < D; ++d) {
      chunk[ch_keys + r * D + d] = test::float_bits(uniform(rng));
      chunk[ch_values + r * D + d] = test::float_bits(uniform(rng));
    }
    chunk[ch_pos + r] = static_cast<uint32_t>(in.row_positions[r]);
    chunk[ch_valid + r] = in.row_valid[r];
    chunk[ch_tags + r] = static_cast<uint32_t>(rng() % 7);
  }
  chunk[ch_init] = in.init_bits;

  // Evictions as the memory plans them; skip infeasible draws.
  uint32_t fresh = 0;
  for (uint8_t v : in.row_valid) fresh += v;
  const uint32_t E = H + fresh > M ? H + fresh - M : 0;
  const std::vector<test::ListEntry> ranked = test::expected_victims(in, std::max(1u, kernels::next_pow2(E)));
  uint32_t eligible = 0;
  for (const test::ListEntry& e : ranked) eligible += e.payload != kInvalid ? 1u : 0u;
  if (E > eligible) return false;  // the layer reports this as infeasible before any kernel runs
  REQUIRE(kernels::next_pow2(std::max(E, 1u)) <= plan.max_keep());

  const uint32_t out_keys = 2, out_values = out_keys + S * D + 1, out_pos = out_values + S * D + 3,
                 out_scores = out_pos + S + 1, out_words = out_scores + S + 2;
  const vk::Buffer kv_buffer = test::upload_words(context, kv, "test kv");
  const vk::Buffer chunk_buffer = test::upload_words(context, chunk, "test chunk");
  const uint32_t keep = kernels::next_pow2(std::max(E, 1u));
  const uint32_t count = H + in.new_rows;
  const vk::Buffer lists = test::device_words(
      context,
      std::max(uint64_t{std::max(1u, kernels::ceil_div(count, plan.select_span()))} * keep * 3,
               kernels::stats_partial_words(plan, M)),
      kInvalid, "test lists");
  const vk::Buffer evicted = test::device_words(context, out_words, 0x0BADF00Du, "test evicted");
  kernels::InsertConstants k{};
  k.capacity = M;
  k.rows = S;
  k.n_sink = c.n_sink;
  k.policy = c.policy;
  k.kv_row = D;
  k.key_stride = D;
  k.kv_key_stride = D;  // fp32 memory: as the chunk
  k.kv_value_stride = D;
  k.kv_key_offset = kv_keys;
  k.kv_value_offset = kv_values;
  k.kv_pos_offset = kv_pos;
  k.kv_score_offset = kv_scores;
  k.kv_tag_offset = kv_tags;
  k.chunk_key_offset = ch_keys;
  k.chunk_value_offset = ch_values;
  k.chunk_pos_offset = ch_pos;
  k.chunk_valid_offset = ch_valid;
  k.chunk_tag_offset = ch_tags;
  k.chunk_init_offset = ch_init;
  k.chunk_place_offset = ch_place;
  k.out_key_offset = out_keys;
  k.out_value_offset = out_values;
  k.out_pos_offset = out_pos;
  k.out_score_offset = out_scores;
  const kernels::InsertKernels insert =
      kernels::InsertKernels::create(context, arena, plan, {{&kv_buffer}, {&chunk_buffer}, {&lists}, {&evicted}}, k)
          .value_or_throw();
  const kernels::InsertParams p{H, E};
  kernels::SelectTileParams s{};
  s.count = count;
  s.keep = keep;
  s.kv_pos_offset = kv_pos;
  s.held = H;
  s.n_sink = c.n_sink;
  s.new_rows = in.new_rows;
  s.int_scores = int_scores ? 1u : 0u;
  s.policy = c.policy;
  s.kv_score_offset = kv_scores;
  s.chunk_pos_offset = ch_pos;
  s.chunk_valid_offset = ch_valid;
  s.chunk_init_offset = ch_init;
  s.victims = E;
  const bool direct = path == InsertPath::direct;
  if (direct && (E == 0 || !insert.direct_insert(count, keep))) return false;
  if (direct) {
    test::run_once(context, [&](vk::CommandRecorder& rec) { insert.insert_direct(rec, s); });
  } else {
  test::run_once(context, [&](vk::CommandRecorder& rec) {
    // As KvRecorder: without victims the scatter places the rows itself.
    if (E > 0) {
      insert.select_victims(rec, s).or_throw();
      insert.plan(rec, p);
      insert.evict_copy(rec, p);
    }
    // The rows up to the last valid one, as KvRecorder dispatches them
    // (the rest hold no valid row).
    uint32_t span = 0;
    for (uint32_t r = 0; r < S; ++r)
      if (in.row_valid[r]) span = r + 1;
    insert.scatter(rec, p, span);
  });
  }

  // Host model: victims, plan, copy-out sorted by position, scatter.
  PlanInputs pin;
  pin.rows = S;
  pin.held = H;
  pin.capacity = M;
  pin.valid = in.row_valid;
  for (uint32_t i = 0; i < E; ++i) pin.victims.push_back(ranked[i].payload);
  const std::vector<uint32_t> placement = expected_plan(pin);

  std::vector<uint32_t> out(out_words, 0x0BADF00Du);  // insert_direct copies nothing out
  std::vector<uint32_t> by_position(pin.victims);
  auto position_of = [&](uint32_t v) { return v & kNewRow ? in.row_positions[v & ~kNewRow] : in.held_positions[v]; };
  std::sort(by_position.begin(), by_position.end(),
            [&](uint32_t a, uint32_t b) { return position_of(a) < position_of(b); });
  for (uint32_t e = 0; e < (direct ? 0 : E); ++e) {
    const uint32_t v = by_position[e];
    const bool is_new = (v & kNewRow) != 0;
    const uint32_t r = v & ~kNewRow;
    for (uint32_t d = 0; d < D; ++d) {
      out[out_keys + e * D + d] = is_new ? chunk[ch_keys + r * D + d] : kv[kv_keys + v * D + d];
      out[out_values + e * D + d] = is_new ? chunk[ch_values + r * D + d] : kv[kv_values + v * D + d];
    }
    out[out_pos + e] = static_cast<uint32_t>(position_of(v));
    out[out_scores + e] = is_new ? in.initial_score_bits(position_of(v)) : kv[kv_scores + v];
  }
  std::vector<uint32_t> kv_after = kv;
  for (uint32_t r = 0; r < S; ++r) {
    const uint32_t slot = placement[r];
    if (slot == kInvalid) continue;
    for (uint32_t d = 0; d < D; ++d) {
      kv_after[kv_keys + slot * D + d] = chunk[ch_keys + r * D + d];
      kv_after[kv_values + slot * D + d] = chunk[ch_values + r * D + d];
    }
    kv_after[kv_pos + slot] = static_cast<uint32_t>(in.row_positions[r]);
    kv_after[kv_tags + slot] = chunk[ch_tags + r];
    kv_after[kv_scores + slot] = in.initial_score_bits(in.row_positions[r]);
  }

  const std::vector<uint32_t> chunk_got = test::download_words(context, chunk_buffer, 0, ch_words);
  const std::vector<uint32_t> place_got(chunk_got.begin() + ch_place, chunk_got.begin() + ch_place + S);
  // Unplanned (E = 0), and planned in insert_direct's shared memory, the
  // placement words keep what was uploaded.
  const std::vector<uint32_t> place_sent(chunk.begin() + ch_place, chunk.begin() + ch_place + S);
  std::string mismatch = first_mismatch(E > 0 && !direct ? placement : place_sent, place_got);
  CHECK_MESSAGE(mismatch.empty(), "placement: " << mismatch);
  mismatch = first_mismatch(out, test::download_words(context, evicted, 0, out_words), "evicted word");
  CHECK_MESSAGE(mismatch.empty(), mismatch);
  mismatch = first_mismatch(kv_after, test::download_words(context, kv_buffer, 0, kv_words), "K/V word");
  CHECK_MESSAGE(mismatch.empty(), mismatch);
  return true;
}

// Returns how many insertions ran.
uint32_t check_insertions(Context& context, InsertPath path = InsertPath::kernels) {
  const kernels::KernelPlan plan = kernels::plan_kernels(context.caps());
  vk::DescriptorArena arena(context);
  std::mt19937_64 rng(31337);
  const uint32_t S = std::min(plan.max_keep(), 32u);  // evictions <= S fit one select list
  const InsertCase cases[] = {
      {16, 0, 5, 0, true, kernels::kPolicyFifo},          // empty memory, no eviction
      {100, 20, S, 0, false, kernels::kPolicyLru},        // room for the chunk: not planned, scatter places
      {40, 30, S, 2, false, kernels::kPolicyLru},         // evictions among held and new rows
      {40, 40, S, 4, true, kernels::kPolicyLfu},          // full, protect_new: held victims only
      {100, 100, S, 0, false, kernels::kPolicyLraLast},   // float scores, new rows at the init word
      {300, 290, S, 3, false, kernels::kPolicyLfa},       // victims across several select tiles
      {70, 70, S, 60, false, kernels::kPolicyLru},        // most held entries pinned
  };
  uint32_t ran = 0;
  for (const InsertCase& c : cases)
    for (int repeat = 0; repeat < 3; ++repeat) ran += check_insertion(context, arena, c, rng, path) ? 1 : 0;
  test::check_no_validation_messages(context);
  return ran;
}

// Chunks of more rows than insert_plan's workgroup W (each invocation sums
// several rows, so its counts span several bits) and evictions on either
// side of W, under every policy; W * 4 victims must fit one select list.
uint32_t check_insertions_across_workgroups(Context& context, InsertPath path = InsertPath::kernels) {
  const kernels::KernelPlan plan = kernels::plan_kernels(context.caps());
  const uint32_t W = plan.insert_workgroup;
  REQUIRE(plan.max_keep() >= 4 * W);
  REQUIRE(4 * W <= kernels::kMaxChunk);
  vk::DescriptorArena arena(context);
  std::mt19937_64 rng(2718);
  // About 0.8 of the rows are valid; evictions are held + valid - M.
  const InsertCase cases[] = {
      {6 * W, 6 * W, 2 * W + 3, 0, false, kernels::kPolicyFifo},         // ~1.6 W victims, held and new
      {8 * W, W, 3 * W, 0, false, kernels::kPolicyLfu},                  // room: no victims, scatter places
      {5 * W, 5 * W - 20, 3 * W + 7, 2, false, kernels::kPolicyLru},     // ~2.2 W
      {4 * W + 9, 4 * W + 9, 4 * W - 1, 4, true, kernels::kPolicyLfu},   // ~3.2 W held victims only
      {3 * W, 3 * W, W + 1, 0, false, kernels::kPolicyLraLast},          // fewer victims than W
      {4 * W, 4 * W - 10, 3 * W, 3, false, kernels::kPolicyLraMax},      // ~2.2 W
      {5 * W, 5 * W, 2 * W, 3, false, kernels::kPolicyLraSum},           // ~1.6 W
      {7 * W, 7 * W, 3 * W + 1, 1, false, kernels::kPolicyLfa},          // ~2.4 W
  };
  uint32_t ran = 0;
  for (const InsertCase& c : cases)
    for (int repeat = 0; repeat < 2; ++repeat) ran += check_insertion(context, arena, c, rng, path) ? 1 : 0;
  test::check_no_validation_messages(context);
  return ran;
}

}  // namespace

TEST_CASE("compaction plan: survivors take the tail, then freed slots in victim order (device limits)") {
  const kernels::KernelPlan plan = kernels::plan_kernels(test::gpu().caps());
  check_plan_sizes(test::gpu(), {plan.insert_workgroup, 1u, 64u});
}

TEST_CASE("compaction plan: survivors take the tail, then freed slots in victim order (tiny workgroups)") {
  const kernels::KernelPlan plan = kernels::plan_kernels(test::tiny_gpu().caps());
  check_plan_sizes(test::tiny_gpu(), {plan.insert_workgroup, 8u});
}

TEST_CASE("compaction end to end: select victims, plan, evict_copy and insert_scatter match a host model") {
  check_insertions(test::gpu());
  check_insertions(test::tiny_gpu());
}

TEST_CASE("compaction by subgroup ballots: arithmetic switched off, insertions across workgroups match a host model") {
  ContextOptions options;
  // Arithmetic off on top of ATTENDRE_DISABLE, so that ctest's features-off
  // run (ballot off too) checks the shared-memory scans here.
  const char* env_off = std::getenv("ATTENDRE_DISABLE");
  options.disabled_features = parse_features(env_off ? env_off : "").value_or_throw().add(Feature::subgroup_arithmetic);
  options.limits = LimitOverrides{64u, 8192u, std::nullopt};  // W = 64, select lists of 256
  auto context_owner = Context::create(options).value_or_throw();
  Context& context = *context_owner;
  const kernels::KernelPlan plan = kernels::plan_kernels(context.caps());
  std::string reductions;
  for (const KernelVariant& v : kernel_variants(context))
    if (v.family == "reductions, scans") reductions = v.variant + " (" + v.reason + ")";
  INFO(reductions);
  if (context.caps().subgroup_ballot) {
    CHECK(plan.insert_scans == kernels::ScanBuild::subgroup_ballot);
    CHECK(reductions ==
          "shared-memory trees (score_stats, select_direct), subgroup ballot bit-sliced prefix sums (insert_plan) "
          "(arithmetic switched off; subgroup ballot, any subgroup size)");
  } else {
    MESSAGE("no subgroup ballot (absent or switched off): insert_plan scans in shared memory");
    CHECK(plan.insert_scans == kernels::ScanBuild::shared_memory);
  }
  check_insertions_across_workgroups(context);
}

TEST_CASE("compaction in one dispatch (insert_direct): selection, plan and scatter match the host model") {
  uint32_t ran = 0;
  for (Context* context : {&test::gpu(), &test::tiny_gpu()}) {
    if (!kernels::plan_kernels(context->caps()).direct) continue;  // insert_direct is built for the direct kernels
    const uint32_t n = check_insertions(*context, InsertPath::direct);
    CHECK(n > 0);
    ran += n;
  }
  // The shared-memory trees (subgroup arithmetic switched off), chunks
  // wider than the workgroup.
  ContextOptions options;
  const char* env_off = std::getenv("ATTENDRE_DISABLE");
  options.disabled_features = parse_features(env_off ? env_off : "").value_or_throw().add(Feature::subgroup_arithmetic);
  options.limits = LimitOverrides{64u, 8192u, std::nullopt};
  auto context_owner = Context::create(options).value_or_throw();
  if (kernels::plan_kernels(context_owner->caps()).direct) {
    const uint32_t n = check_insertions_across_workgroups(*context_owner, InsertPath::direct);
    CHECK(n > 0);
    ran += n;
  }
  if (ran == 0) MESSAGE("no direct-kernel device here: insert_direct not exercised");
}
