// The context's switches and failure modes: environment variables that
// reject values they do not understand, and a fence wait that gives up.
#include "support.hpp"

#include "kernels/kernel_plan.hpp"
#include "interface/bench.h"
#include "kernels/kernel.hpp"
#include "vulkan/api.hpp"
#include "vulkan/buffer.hpp"
#include "vulkan/commands.hpp"

#include <attendre/diagnostics.hpp>
#include <attendre/error.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <cstdlib>
#include <string>

namespace attendre {
namespace {

using test::ScopedEnv;

std::string context_error() {
  try {
    auto context_owner = Context::create().value_or_throw();
    [[maybe_unused]] Context& context = *context_owner;
  } catch (const Error& e) {
    CHECK(e.code() == ErrorCode::invalid_argument);
    return e.what();
  }
  return "";
}

// Whether `c` is lavapipe, the device the load quirks are set on.
bool is_lavapipe(const DeviceCaps& c) { return c.type == VK_PHYSICAL_DEVICE_TYPE_CPU && c.name.rfind("llvmpipe", 0) == 0; }

// Options that prefer narrow loads over a quirk (`prefer` set to `value`).
ContextOptions preferring(std::optional<bool> ContextOptions::*prefer, bool value = true) {
  ContextOptions options;
  options.*prefer = value;
  return options;
}

// What every load quirk shares: set exactly on lavapipe, cleared by its own
// preference (the other quirk stays); unset, the 0/1 variable `env` decides;
// an explicit choice wins over it and reads no environment, not even a typo.
void check_load_quirk(std::optional<bool> ContextOptions::*prefer, bool DriverQuirks::*quirk, const char* env) {
  INFO(env);
  const auto plain_owner = Context::create().value_or_throw();
  const auto preferred_owner = Context::create(preferring(prefer)).value_or_throw();
  const Context& plain = *plain_owner;
  const Context& preferred = *preferred_owner;
  const bool lavapipe = is_lavapipe(plain.caps());
  CHECK(plain.caps().quirks.*quirk == lavapipe);
  CHECK_FALSE(preferred.caps().quirks.*quirk);
  const DriverQuirks& q = preferred.caps().quirks;
  CHECK(q.half_loads_lane_by_lane + q.byte_loads_lane_by_lane == (lavapipe ? 1 : 0));
  ScopedEnv set(env, "1");
  CHECK_FALSE(Context::create().value_or_throw()->caps().quirks.*quirk);
  CHECK(Context::create(preferring(prefer, false)).value_or_throw()->caps().quirks.*quirk == lavapipe);
  ScopedEnv typo(env, "yes");
  CHECK_THROWS_WITH_AS(Context::create().value_or_throw(), (std::string(env) + " must be 0 or 1, got 'yes'").c_str(), Error);
  CHECK(Context::create(preferring(prefer, false)).value_or_throw()->caps().quirks.*quirk == lavapipe);
}

TEST_CASE("context: environment switches reject values they do not understand") {
  {
    ScopedEnv env("ATTENDRE_VALIDATION", "yes");  // was silently read as off
    CHECK(context_error().find("ATTENDRE_VALIDATION must be 0, 1") != std::string::npos);
  }
  {
    ScopedEnv env("ATTENDRE_PORTABLE_LIMITS", "true");
    CHECK(context_error().find("ATTENDRE_PORTABLE_LIMITS must be 0 or 1, got 'true'") != std::string::npos);
  }
  {
    ScopedEnv env("ATTENDRE_DISABLE", "shuffle,fp16");
    CHECK(context_error() == "unknown device feature 'fp16' (valid: 16bit, float16, 8bit, arithmetic, ballot, "
                             "shuffle, size_control, large_workgroups, timeline, texel)");
  }
  ScopedEnv off("ATTENDRE_VALIDATION", "0");
  ScopedEnv limits("ATTENDRE_PORTABLE_LIMITS", "0");
  ScopedEnv disable("ATTENDRE_DISABLE", "");
  CHECK_NOTHROW(Context::create().value_or_throw());
}

TEST_CASE("context: feature switches mask the caps before planning, options first, then ATTENDRE_DISABLE") {
  CHECK(parse_features("").value_or_throw().bits == 0);
  CHECK(parse_features("shuffle,16bit").value_or_throw() == FeatureSet{}.add(Feature::subgroup_shuffle).add(Feature::storage_16bit));
  for (uint32_t f = 0; f < kFeatureCount; ++f)
    CHECK(parse_features(feature_name(static_cast<Feature>(f))).value_or_throw().has(static_cast<Feature>(f)));
  CHECK_THROWS_AS(parse_features("shuffle,").value_or_throw(), Error);  // an empty name is a typo too

  FeatureSet all;
  for (uint32_t f = 0; f < kFeatureCount; ++f) all.add(static_cast<Feature>(f));
  ContextOptions options;
  options.disabled_features = all;
  auto off_owner = Context::create(options).value_or_throw();
  Context& off = *off_owner;
  const DeviceCaps& c = off.caps();
  CHECK(c.disabled == all);
  const bool any = c.storage_16bit || c.float16 || c.storage_8bit || c.subgroup_arithmetic || c.subgroup_ballot ||
                   c.subgroup_shuffle || c.subgroup_size_control || c.large_workgroups || c.timeline_semaphore ||
                   c.texel_buffers;
  CHECK_FALSE(any);
  CHECK(c.max_invocations <= 128);
  CHECK(c.max_shared_bytes <= 16384);
  const kernels::KernelPlan plan = kernels::plan_kernels(c);
  CHECK(plan.workgroup <= 128);
  CHECK(plan.direct_share == 0);  // block types take the tiled kernels
  CHECK(kernels::f16_as_words(c));
  // Every family's fallback is named, with the switch as its reason.
  const std::vector<KernelVariant> variants = kernel_variants(off);
  for (const KernelVariant& v : variants) {
    INFO(v.family << ": " << v.variant << " (" << v.reason << ")");
    if (v.family == "fp16 weights") CHECK(v.variant == "unpackHalf2x16 of 32-bit words");
    if (v.family == "tickets") CHECK(v.variant == "fences, host waits only");
    if (v.family == "fp16 weights" || v.family == "workgroups" || v.family == "tickets")
      CHECK(v.reason.find("switched off") != std::string::npos);
    if (v.family == "matmul (block types)") CHECK(v.variant == "tiled GEMM + matvec");
  }
  CHECK(describe_variants(off).size() == variants.size() + c.quirks.describe().size());
  test::check_no_validation_messages(off);

  // Options that say nothing-off win over ATTENDRE_DISABLE.
  ScopedEnv env("ATTENDRE_DISABLE", "16bit,large_workgroups");
  options.disabled_features = FeatureSet{};
  auto on_owner = Context::create(options).value_or_throw();
  Context& on = *on_owner;
  CHECK(on.caps().disabled.bits == 0);
  options.disabled_features.reset();
  auto from_env_owner = Context::create(options).value_or_throw();
  Context& from_env = *from_env_owner;
  CHECK(from_env.caps().disabled == parse_features("16bit,large_workgroups").value_or_throw());
  CHECK_FALSE(from_env.caps().storage_16bit);
}

TEST_CASE("context: a submission the device does not finish within the fence timeout is reported as device lost") {
  ContextOptions options;
  options.validation = Validation::off;  // the abandoned fence is left to the device's destruction
  options.fence_timeout_ms = 0;          // any wait for unfinished work times out
  auto context_owner = Context::create(options).value_or_throw();
  Context& context = *context_owner;
  const kernels::KernelPlan plan = kernels::plan_kernels(context.caps());
  vk::DescriptorArena arena(context);
  const uint32_t groups = 256, W = plan.workgroup;
  vk::Buffer out = vk::Buffer::create(
      context, uint64_t{groups} * W * 16, vk::MemoryIntent::device, "test fma results").value_or_throw();
  const kernels::Kernel fma =
      kernels::Kernel::make<kernels::BenchParams>(context, arena, shaders::ShaderId::bench_fma, {W}, {{&out}})
          .value_or_throw();
  vk::Submission submission = vk::Submission::create(context).value_or_throw();
  vk::CommandRecorder& rec = *submission.begin().value_or_throw();
  // About 0.2 s of FMA on a 2-core CPU device; far longer than submit-to-wait.
  fma.dispatch(rec, kernels::BenchParams{0, 20000, 0.999f, 0.001f}, groups);
  submission.submit().or_throw();
  const Status lost = submission.wait();
  REQUIRE_FALSE(lost.ok());
  CHECK(lost.code() == ErrorCode::device_lost);
  CHECK(lost.message().find("did not finish a submission within 0 s") != std::string::npos);
  // The device was only slow: let it finish before the buffers go.
  vk::vkDeviceWaitIdle(context.device());
}

}  // namespace
}  // namespace attendre

namespace attendre {
namespace {

TEST_CASE("context: forced non-coherent host memory is synchronized only by flush and invalidate") {
  ContextOptions options;
  LimitOverrides limits;
  limits.non_coherent_host = true;
  options.limits = limits;
  auto context_owner = Context::create(options).value_or_throw();
  Context& context = *context_owner;
  vk::Buffer upload = vk::Buffer::create(context, 64, vk::MemoryIntent::upload, "test upload").value_or_throw();
  vk::Buffer readback = vk::Buffer::create(context, 64, vk::MemoryIntent::readback, "test readback").value_or_throw();
  auto* host = static_cast<uint32_t*>(upload.mapped());
  host[0] = 7u;
  upload.invalidate().or_throw();  // no flush: the device's copy never saw the 7
  CHECK(host[0] != 7u);
  host[0] = 42u;
  // A submission flushes what its commands read and invalidates what they wrote.
  vk::Submission submission = vk::Submission::create(context).value_or_throw();
  vk::CommandRecorder& rec = *submission.begin().value_or_throw();
  rec.copy(upload, 0, readback, 0, 64);
  submission.submit().or_throw();
  submission.wait().or_throw();
  CHECK(static_cast<const uint32_t*>(readback.mapped())[0] == 42u);
  test::check_no_validation_messages(context);
}

TEST_CASE("context: the quirk half_loads_lane_by_lane reads fp16 as words by default, prefer_half_loads loads halves") {
  // On lavapipe the quirk is set and a default context reads every fp16
  // value as unpacked words; on any device without the quirk, 16-bit loads
  // follow the feature alone. prefer_half_loads always follows the feature.
  check_load_quirk(&ContextOptions::prefer_half_loads, &DriverQuirks::half_loads_lane_by_lane, "ATTENDRE_HALF_LOADS");
  const auto plain_owner = Context::create().value_or_throw();
  const auto preferred_owner = Context::create(preferring(&ContextOptions::prefer_half_loads)).value_or_throw();
  Context& plain = *plain_owner;
  Context& preferred = *preferred_owner;
  const DeviceCaps& c = plain.caps();
  const bool lavapipe = is_lavapipe(c);
  CHECK(kernels::f16_as_words(c) == (!c.storage_16bit || lavapipe));
  CHECK(kernels::f16_as_words(preferred.caps()) == !preferred.caps().storage_16bit);
  if (!lavapipe) MESSAGE("not lavapipe: the quirk is not set, both contexts read fp16 by the feature alone");
  using kernels::ShaderId;
  using kernels::WeightKernel;
  for (const KernelVariant& v : kernel_variants(plain)) {
    if (v.family != "fp16 weights" && v.family != "fp16 K/V and Q memories" && v.family != "fp16 activations") continue;
    INFO(v.family << ": " << v.variant << " (" << v.reason << ")");
    if (lavapipe && c.storage_16bit) {
      CHECK(v.variant.starts_with("unpackHalf2x16 of 32-bit words"));
      CHECK(v.reason == "quirk half_loads_lane_by_lane");
    }
  }
  const std::vector<std::string> lines = describe_variants(plain);
  CHECK((std::find(lines.begin(), lines.end(),
                   "quirk half_loads_lane_by_lane: lavapipe gathers 16-bit loads lane by lane, slower than 32-bit "
                   "words -> fp16 weights, memories and activations read as unpacked words") != lines.end()) ==
        lavapipe);
  if (lavapipe && c.storage_16bit) {
    CHECK(kernels::weight_variant(plain, WeightKernel::gemm, ElementType::f16, "W").value_or_throw() ==
          ShaderId::matmul_f16_words);
    CHECK(kernels::weight_variant(preferred, WeightKernel::gemm, ElementType::f16, "W").value_or_throw() ==
          ShaderId::matmul_f16);
    CHECK(kernels::weight_variant(plain, WeightKernel::matvec, ElementType::q4_0, "W", MemoryStorage::f16).value() ==
          ShaderId::matvec_q4_0_a16_words);
    CHECK(
        kernels::weight_variant(preferred, WeightKernel::matvec, ElementType::q4_0, "W", MemoryStorage::f16).value() ==
        ShaderId::matvec_q4_0_a16);
  }
  test::check_no_validation_messages(plain);
  test::check_no_validation_messages(preferred);
}

TEST_CASE("context: the quirk byte_loads_lane_by_lane reads Q8_0 as words by default, prefer_byte_loads loads int8") {
  // On lavapipe the quirk is set and a default context unpacks Q8_0 quants
  // from 32-bit words; elsewhere int8 loads follow the feature alone, and
  // prefer_byte_loads always does.
  check_load_quirk(&ContextOptions::prefer_byte_loads, &DriverQuirks::byte_loads_lane_by_lane, "ATTENDRE_BYTE_LOADS");
  ContextOptions options = preferring(&ContextOptions::prefer_byte_loads);
  const auto plain_owner = Context::create().value_or_throw();
  const auto preferred_owner = Context::create(options).value_or_throw();
  Context& plain = *plain_owner;
  Context& preferred = *preferred_owner;
  const DeviceCaps& c = plain.caps();
  const bool lavapipe = is_lavapipe(c);
  CHECK(kernels::q8_0_as_int8(c) == (c.storage_8bit && !lavapipe));
  CHECK(kernels::q8_0_as_int8(preferred.caps()) == preferred.caps().storage_8bit);
  if (!lavapipe) MESSAGE("not lavapipe: the quirk is not set, both contexts read Q8_0 by the feature alone");
  if (!c.storage_8bit) MESSAGE("no 8-bit storage (or ATTENDRE_DISABLE=8bit): both contexts read Q8_0 as words");
  // The "q8_0 weights" line says which build runs and why, on each context.
  auto q8_0_line = [](const Context& context) {
    std::vector<KernelVariant> lines;
    for (const KernelVariant& v : kernel_variants(context))
      if (v.family == "q8_0 weights") lines.push_back(v);
    CHECK(lines.size() == 1);
    for (const KernelVariant& v : kernel_variants(context)) CHECK(v.family != "8-bit storage");
    return lines.empty() ? KernelVariant{} : lines[0];
  };
  const KernelVariant line = q8_0_line(plain), preferred_line = q8_0_line(preferred);
  CHECK(line.variant == (kernels::q8_0_as_int8(c) ? "int8 loads" : "int8 unpacked from 32-bit words"));
  CHECK(preferred_line.variant == (preferred.caps().storage_8bit ? "int8 loads" : "int8 unpacked from 32-bit words"));
  if (c.storage_8bit) {
    CHECK(line.reason == (lavapipe ? "quirk byte_loads_lane_by_lane" : "storageBuffer8BitAccess"));
    CHECK(preferred_line.reason == "storageBuffer8BitAccess");
  }
  const std::vector<std::string> lines = describe_variants(plain);
  CHECK(std::count_if(lines.begin(), lines.end(), [](const std::string& l) {
          return l.starts_with("quirk byte_loads_lane_by_lane: lavapipe gathers 8-bit loads lane by lane, slower than "
                               "32-bit words (") &&
                 l.ends_with(") -> Q8_0 quants unpacked from words");
        }) == (lavapipe ? 1 : 0));
  using kernels::ShaderId;
  using kernels::WeightKernel;
  if (lavapipe && c.storage_8bit) {
    CHECK(kernels::weight_variant(plain, WeightKernel::gemm, ElementType::q8_0, "W").value_or_throw() ==
          ShaderId::matmul_q8_0);
    CHECK(kernels::weight_variant(preferred, WeightKernel::gemm, ElementType::q8_0, "W").value_or_throw() ==
          ShaderId::matmul_q8_0_int8);
    CHECK(kernels::weight_variant(preferred, WeightKernel::embedding, ElementType::q8_0, "W").value_or_throw() ==
          ShaderId::embedding_q8_0_int8);
    CHECK(kernels::weight_variant(plain, WeightKernel::direct, ElementType::q8_0, "W", MemoryStorage::f16).value() ==
          ShaderId::matmul_direct_q8_0_a16_words);
    CHECK(
        kernels::weight_variant(preferred, WeightKernel::direct, ElementType::q8_0, "W", MemoryStorage::f16).value() ==
        ShaderId::matmul_direct_q8_0_int8_a16_words);
  }
  // Switched off, words whatever the preference, and the line says why.
  options.disabled_features = FeatureSet{}.add(Feature::storage_8bit);
  auto off_owner = Context::create(options).value_or_throw();
  Context& off = *off_owner;
  CHECK_FALSE(kernels::q8_0_as_int8(off.caps()));
  CHECK(q8_0_line(off).reason == "8bit switched off");
  CHECK(kernels::weight_variant(off, WeightKernel::matvec, ElementType::q8_0, "W").value_or_throw() ==
        ShaderId::matvec_q8_0);
  test::check_no_validation_messages(plain);
  test::check_no_validation_messages(preferred);
  test::check_no_validation_messages(off);
}

TEST_CASE("context: the quirk half_math_emulated keeps fp32 math by default, prefer_half_math takes fp16 products") {
  // On lavapipe the quirk is set and fp16 activations x fp16 weights are
  // multiplied in fp32; prefer_half_math clears it, and fp16 math then
  // follows shaderFloat16 and 16-bit loads alone. Both contexts take 16-bit
  // loads, so only the math preference differs.
  ContextOptions loads;
  loads.prefer_half_loads = true;
  auto plain_owner = Context::create(loads).value_or_throw();
  Context& plain = *plain_owner;
  ContextOptions options = loads;
  options.prefer_half_math = true;
  auto preferred_owner = Context::create(options).value_or_throw();
  Context& preferred = *preferred_owner;
  const DeviceCaps& c = plain.caps();
  const bool lavapipe = c.type == VK_PHYSICAL_DEVICE_TYPE_CPU && c.name.rfind("llvmpipe", 0) == 0;
  CHECK(c.quirks.half_math_emulated == lavapipe);
  CHECK_FALSE(preferred.caps().quirks.half_math_emulated);
  CHECK(kernels::half_math(c) == (c.float16 && c.storage_16bit && !lavapipe));
  CHECK(kernels::half_math(preferred.caps()) == (c.float16 && c.storage_16bit));
  if (!lavapipe) MESSAGE("not lavapipe: the quirk is not set, both contexts follow the features alone");
  auto math_line = [](const Context& context) {
    for (const KernelVariant& v : kernel_variants(context))
      if (v.family == "shaderFloat16") return v;
    return KernelVariant{};
  };
  const std::vector<std::string> lines = describe_variants(plain);
  CHECK((std::find(lines.begin(), lines.end(),
                   "quirk half_math_emulated: lavapipe converts each fp16 operation through fp32, fp16 products "
                   "measured slower than fp32 math (64 x 1536 x 576: direct 36 against 28 ms, tiled 59 against 44 ms) "
                   "-> fp16 activations x fp16 weights multiplied in fp32") !=
         lines.end()) == lavapipe);
  using kernels::ShaderId;
  using kernels::WeightKernel;
  if (lavapipe && c.float16 && c.storage_16bit) {
    CHECK(math_line(plain).reason == "quirk half_math_emulated");
    CHECK(math_line(preferred).reason == "shaderFloat16, 16-bit loads");
    CHECK(kernels::weight_variant(plain, WeightKernel::gemm, ElementType::f16, "W", MemoryStorage::f16).value() ==
          ShaderId::matmul_f16_a16);
    CHECK(kernels::weight_variant(preferred, WeightKernel::gemm, ElementType::f16, "W", MemoryStorage::f16).value() ==
          ShaderId::matmul_f16_a16_math);
    CHECK(kernels::weight_variant(preferred, WeightKernel::matvec, ElementType::f16, "W", MemoryStorage::f16).value() ==
          ShaderId::matvec_f16_a16_math);
    CHECK(kernels::weight_variant(preferred, WeightKernel::direct, ElementType::f16, "W", MemoryStorage::f16).value() ==
          ShaderId::matmul_direct_f16_a16_math);
    // Never for other weights or fp32 activations, and never over words.
    CHECK(kernels::weight_variant(preferred, WeightKernel::gemm, ElementType::q8_0, "W", MemoryStorage::f16).value() ==
          ShaderId::matmul_q8_0_a16);
    CHECK(kernels::weight_variant(preferred, WeightKernel::gemm, ElementType::f16, "W").value_or_throw() ==
          ShaderId::matmul_f16);
    ContextOptions words = options;
    words.prefer_half_loads = false;
    const auto quirked_loads_owner = Context::create(words).value_or_throw();
    const Context& quirked_loads = *quirked_loads_owner;
    CHECK_FALSE(kernels::half_math(quirked_loads.caps()));
    CHECK(math_line(quirked_loads).reason == "16-bit loads not in use: fp16 read as unpacked words");
  }
  test::check_no_validation_messages(plain);
  test::check_no_validation_messages(preferred);

  // Unset, ATTENDRE_HALF_MATH decides; an explicit choice wins over it.
  ScopedEnv env("ATTENDRE_HALF_MATH", "1");
  CHECK_FALSE(Context::create(loads).value_or_throw()->caps().quirks.half_math_emulated);
  options.prefer_half_math = false;
  CHECK(Context::create(options).value_or_throw()->caps().quirks.half_math_emulated == lavapipe);
  ScopedEnv typo("ATTENDRE_HALF_MATH", "yes");
  CHECK_THROWS_WITH_AS(Context::create().value_or_throw(), "ATTENDRE_HALF_MATH must be 0 or 1, got 'yes'", Error);
}

}  // namespace
}  // namespace attendre
