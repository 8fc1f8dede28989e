// Barriers derived from what commands read and write (vk::CommandRecorder):
// where the recorder puts them, that the Vulkan synchronization validation
// run by the whole suite really reports a missing one, and that kernels
// refuse to bind one buffer range twice when a binding writes it.
#include "kernel_harness.hpp"
#include "support.hpp"

#include "kernels/kernel_plan.hpp"
#include "kernels/add.hpp"
#include "kernels/norm.hpp"
#include "vulkan/hazards.hpp"
#include "vulkan/spirv_reflect.hpp"

#include <attendre/diagnostics.hpp>
#include <attendre/error.hpp>
#include <attendre/shader_ids.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <string>

namespace attendre {
namespace {

using kernels::RowRef;

TEST_CASE("hazards: read after write, write after read and write after write overlap, reads never wait") {
  vk::HazardTracker tracker;
  // Borrowed wrappers of made-up handles: identities only, never used by Vulkan.
  const auto handle = [](uintptr_t value) { return reinterpret_cast<VkBuffer>(value); };
  const vk::Buffer buffer_a = vk::Buffer::borrow(handle(0x10), 4096, "a");
  const vk::Buffer buffer_b = vk::Buffer::borrow(handle(0x20), 4096, "b");
  const vk::Buffer* a = &buffer_a;
  const vk::Buffer* b = &buffer_b;
  tracker.add({a, 0, 100, false, true, "write a[0,100)"});
  tracker.add({b, 0, 100, true, false, "read b[0,100)"});
  CHECK(tracker.conflict({a, 99, 200, true, false, "read"}) != nullptr);     // RAW, one byte of overlap
  CHECK(tracker.conflict({a, 100, 200, true, true, "read/write"}) == nullptr);  // adjacent, disjoint
  CHECK(tracker.conflict({a, 50, 60, false, true, "write"}) != nullptr);     // WAW
  CHECK(tracker.conflict({b, 10, 20, false, true, "write"}) != nullptr);     // WAR
  CHECK(tracker.conflict({b, 10, 20, true, false, "read"}) == nullptr);      // RAR
  tracker.clear();
  CHECK(tracker.conflict({a, 0, 100, true, true, "read/write"}) == nullptr);
}

TEST_CASE("hazards: two wrappers of one VkBuffer are one buffer") {
  // An application passes one VkBuffer as an input and as an output range:
  // borrowed twice, it must still order the output's write after the
  // input's read where the ranges overlap.
  const VkBuffer app = reinterpret_cast<VkBuffer>(uintptr_t{0x30});
  const vk::Buffer input = vk::Buffer::borrow(app, 4096, "input");
  const vk::Buffer output = vk::Buffer::borrow(app, 4096, "output");
  const vk::Buffer other = vk::Buffer::borrow(reinterpret_cast<VkBuffer>(uintptr_t{0x40}), 4096, "other");
  vk::HazardTracker tracker;
  tracker.add({&input, 0, 256, true, false, "copy q"});
  CHECK(tracker.conflict({&output, 128, 512, false, true, "copy out"}) != nullptr);  // WAR through the same handle
  CHECK(tracker.conflict({&output, 256, 512, false, true, "copy out"}) == nullptr);  // disjoint ranges
  CHECK(tracker.conflict({&other, 0, 256, false, true, "copy out"}) == nullptr);     // another handle
}

TEST_CASE("spirv reflection: each binding's reads and writes come from the shader's qualifiers") {
  // norm.comp: X readonly, weights readonly, Y writeonly; in place, X is read and written.
  const std::vector<vk::BindingAccess> norm =
      vk::reflect_storage_bindings(shaders::spirv(shaders::ShaderId::norm_rms)).value_or_throw();
  REQUIRE(norm.size() == 3);
  CHECK((norm[0].reads && !norm[0].writes));
  CHECK((norm[1].reads && !norm[1].writes));
  CHECK((!norm[2].reads && norm[2].writes));
  const std::vector<vk::BindingAccess> in_place =
      vk::reflect_storage_bindings(shaders::spirv(shaders::ShaderId::norm_rms_in_place)).value_or_throw();
  REQUIRE(in_place.size() == 2);
  CHECK((in_place[0].reads && in_place[0].writes));
  // matmul: aliasing views of the weight binding merge into one read.
  const std::vector<vk::BindingAccess> matmul =
      vk::reflect_storage_bindings(shaders::spirv(shaders::ShaderId::matmul_direct_f32)).value_or_throw();
  REQUIRE(matmul.size() == 4);
  CHECK((matmul[1].reads && !matmul[1].writes));
  CHECK(matmul[2].writes);
  const Result<std::vector<vk::BindingAccess>> malformed =
      vk::reflect_storage_bindings(std::vector<uint32_t>{1, 2, 3});
  REQUIRE_FALSE(malformed.ok());
  CHECK(malformed.status().code() == ErrorCode::invalid_argument);
  CHECK(malformed.status().message() == "reflect_storage_bindings: not a SPIR-V module");
}

TEST_CASE("recorder: a barrier goes exactly before the first command that depends on a pending access") {
  Context& context = test::gpu();
  const vk::Buffer a = test::device_words(context, 256, 1u, "test a");
  const vk::Buffer b = test::device_words(context, 256, 2u, "test b");
  const vk::Buffer c = test::device_words(context, 256, 3u, "test c");
  vk::Submission submission = vk::Submission::create(context).value_or_throw();
  vk::CommandRecorder& rec = *submission.begin().value_or_throw();
  const uint32_t start = rec.counts().barriers;  // the barrier ordering earlier submissions
  rec.copy(a, 0, b, 0, 256);      // reads a[0,256), writes b[0,256)
  rec.copy(a, 0, c, 0, 256);      // reads a again, writes c: independent
  rec.copy(a, 512, b, 512, 256);  // writes b's second quarter: disjoint from the first copy
  CHECK(rec.counts().barriers == start);
  rec.copy(b, 0, c, 768, 64);     // reads b[0,64): written by the first copy
  CHECK(rec.counts().barriers == start + 1);
  rec.fill(a, 0, 64, 7u);         // writes a[0,64): read by the first copies, before the barrier
  CHECK(rec.counts().barriers == start + 1);
  rec.fill(b, 64, 64, 7u);        // writes b[64,128): read by nothing since the barrier
  CHECK(rec.counts().barriers == start + 1);
  rec.copy(a, 0, c, 0, 4);        // reads a[0,4): written by the fill since the barrier
  CHECK(rec.counts().barriers == start + 2);
  submission.submit().or_throw();
  submission.wait().or_throw();
  CHECK(test::download_words(context, c, 0, 1)[0] == 7u);
  CHECK(test::download_words(context, c, 192, 1)[0] == 1u);  // b held a copy of a
  test::check_no_validation_messages(context);
}

// Records add(A, B) -> C, then add(C, B) -> D: the second reads what the first wrote.
void record_dependent_adds(Context& context, vk::CommandRecorder& rec, const vk::Buffer& a, const vk::Buffer& b,
                           const vk::Buffer& c, const vk::Buffer& d, vk::DescriptorArena& arena) {
  const kernels::KernelPlan plan = kernels::plan_kernels(context.caps());
  const kernels::Add first = kernels::Add::create(context, arena, plan, {&a}, {&b}, {&c}).value_or_throw();
  const kernels::Add second = kernels::Add::create(context, arena, plan, {&c}, {&b}, {&d}).value_or_throw();
  const RowRef rows = RowRef::contiguous(64);
  first.record(rec, {4, 64, rows, rows, rows}).or_throw();
  second.record(rec, {4, 64, rows, rows, rows}).or_throw();
}

TEST_CASE("synchronization validation reports a planted missing barrier, and none with derived barriers") {
  ContextOptions options;
  options.validation = Validation::synchronization;  // whatever ATTENDRE_VALIDATION says
  auto context_owner = Context::create(options).value_or_throw();
  Context& context = *context_owner;
  const vk::Buffer a = test::device_words(context, 256, 0u, "test a");
  const vk::Buffer b = test::device_words(context, 256, 0u, "test b");
  const vk::Buffer c = test::device_words(context, 256, 0u, "test c");
  const vk::Buffer d = test::device_words(context, 256, 0u, "test d");
  vk::DescriptorArena arena(context);
  clear_validation_messages(context);

  auto run = [&](bool derive) {
    vk::Submission submission = vk::Submission::create(context).value_or_throw();
    vk::CommandRecorder& rec = *submission.begin().value_or_throw();
    if (!derive) rec.disable_derived_barriers_for_test();
    record_dependent_adds(context, rec, a, b, c, d, arena);
    rec.copy(d, 0, a, 0, 64);  // a transfer write over what the first add read
    submission.submit().or_throw();
    submission.wait().or_throw();
  };
  run(false);
  const std::vector<std::string> planted = validation_messages(context);
  auto reported = [&](const char* hazard) {
    return std::any_of(planted.begin(), planted.end(),
                       [&](const std::string& m) { return m.find(hazard) != std::string::npos; });
  };
  CHECK(reported("SYNC-HAZARD-READ-AFTER-WRITE"));
  CHECK(reported("SYNC-HAZARD-WRITE-AFTER-READ"));
  clear_validation_messages(context);

  run(true);
  test::check_no_validation_messages(context);
}

TEST_CASE("kernels refuse bindings that overlap when one of them is written") {
  Context& context = test::gpu();
  const kernels::KernelPlan plan = kernels::plan_kernels(context.caps());
  vk::DescriptorArena arena(context);
  const vk::Buffer x = test::device_words(context, 512, 0u, "test x");
  const vk::Buffer w = test::device_words(context, 64, 0u, "test weights");
  // Y over part of X without being X: no shader variant can do that safely.
  const Result<kernels::Norm> overlapping =
      kernels::Norm::create(context, arena, plan, NormKind::rms, {&x, 0, 1024}, {&w}, {&x, 512, 1024});
  REQUIRE_FALSE(overlapping.ok());
  CHECK(overlapping.status().code() == ErrorCode::invalid_argument);
  CHECK(overlapping.status().message().find("overlap") != std::string::npos);
  // The same binding selects the in-place variant; disjoint sections of one buffer are fine.
  CHECK(kernels::Norm::create(context, arena, plan, NormKind::rms, {&x}, {&w}, {&x}).ok());
  CHECK(kernels::Norm::create(context, arena, plan, NormKind::rms, {&x, 0, 1024}, {&w}, {&x, 1024, 1024}).ok());
  test::check_no_validation_messages(context);
}

}  // namespace
}  // namespace attendre
