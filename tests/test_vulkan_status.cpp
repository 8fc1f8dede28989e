// Errors as values in the Vulkan runtime and the kernels: each failure
// comes back as a Status or Result with its own code and message, leaves
// nothing half-built behind, and a kernel's value form reports what its
// throwing form throws; on success each does its work.
#include "kernel_harness.hpp"
#include "support.hpp"

#include "kernels/add.hpp"
#include "kernels/kernel.hpp"
#include "kernels/kernel_plan.hpp"
#include "kernels/norm.hpp"
#include "kernels/select.hpp"
#include "interface/bench.h"
#include "vulkan/api.hpp"
#include "vulkan/buffer.hpp"
#include "vulkan/check.hpp"
#include "vulkan/commands.hpp"
#include "vulkan/context_state.hpp"
#include "vulkan/memory_arena.hpp"
#include "vulkan/pipeline.hpp"

#include <attendre/error.hpp>
#include <attendre/status.hpp>

#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace attendre {
namespace {

using test::ScopedEnv;

// What `call` throws, as a Status (ok when it throws nothing).
template <class Call>
Status thrown(Call&& call) {
  try {
    call();
  } catch (const Error& e) {
    return {e.code(), e.what()};
  }
  return {};
}

// A failure of `code`, reported as a value.
void check_failure(const Status& value, ErrorCode code) {
  REQUIRE_FALSE(value.ok());
  CHECK(value.code() == code);
}

// A failure reported as a value is the one the throwing form throws.
void check_same_failure(const Status& value, const Status& thrown_failure, ErrorCode code) {
  REQUIRE_FALSE(value.ok());
  REQUIRE_FALSE(thrown_failure.ok());
  CHECK(value.code() == code);
  CHECK(thrown_failure.code() == code);
  CHECK(value.message() == thrown_failure.message());
}

ContextOptions quiet_options() {
  ContextOptions options;
  options.validation = Validation::off;  // no layer: these contexts only fail or compare caps
  return options;
}

TEST_CASE("vulkan status: VkResults map to their own codes, device lost and out of memory included") {
  CHECK(vk::checked(VK_SUCCESS, "vkQueueSubmit").ok());
  const Status lost = vk::checked(VK_ERROR_DEVICE_LOST, "vkQueueSubmit");
  CHECK(lost.code() == ErrorCode::device_lost);
  CHECK(lost.message() == "vkQueueSubmit failed: VK_ERROR_DEVICE_LOST (-4)");
  CHECK(vk::checked(VK_ERROR_OUT_OF_DEVICE_MEMORY, "vkAllocateMemory").code() == ErrorCode::out_of_device_memory);
  CHECK(vk::checked(VK_ERROR_OUT_OF_HOST_MEMORY, "vkCreateBuffer").code() == ErrorCode::out_of_host_memory);
  CHECK(vk::checked(VK_ERROR_EXTENSION_NOT_PRESENT, "vkCreateDevice").code() == ErrorCode::unsupported);
  CHECK(vk::checked(VK_ERROR_TOO_MANY_OBJECTS, "vkCreateDevice").code() == ErrorCode::vulkan_error);
}

TEST_CASE("vulkan status: a context that cannot be created fails as a value, leaking nothing") {
  test::CountingAllocator counting;
  ContextOptions options = quiet_options();
  options.device = "no such device 7f3a";
  options.allocator = counting.callbacks();
  const Result<std::unique_ptr<Context>> context = Context::create(options);
  REQUIRE_FALSE(context.ok());
  CHECK(context.status().message().rfind("no Vulkan device matches 'no such device 7f3a'", 0) == 0);
  // The instance it made before selecting a device is gone again.
  CHECK(counting.live() == 0);
  check_same_failure(context.status(), thrown([&] { (void)Context::create(options).value_or_throw(); }), ErrorCode::unsupported);
  CHECK(counting.live() == 0);

  // An application's device without handles.
  const Result<std::unique_ptr<Context>> adopted = Context::adopt(ExternalDevice{});
  check_same_failure(adopted.status(), thrown([] { (void)Context::adopt(ExternalDevice{}).value_or_throw(); }), ErrorCode::invalid_argument);
  CHECK(adopted.status().message() == "ExternalDevice needs instance, physical device, device and queue");
}

TEST_CASE("vulkan status: bad switches fail as values, named as the throwing forms name them") {
  // An unknown feature name: the list the options would take.
  const Result<FeatureSet> parsed = parse_features("shuffle,fp16");
  check_same_failure(parsed.status(), thrown([] { (void)parse_features("shuffle,fp16").value_or_throw(); }),
                     ErrorCode::invalid_argument);
  CHECK(parsed.status().message() ==
        "unknown device feature 'fp16' (valid: 16bit, float16, 8bit, arithmetic, ballot, shuffle, size_control, "
        "large_workgroups, timeline, texel)");
  CHECK(parse_features("shuffle,16bit").value() ==
    FeatureSet{}.add(Feature::subgroup_shuffle).add(Feature::storage_16bit));
  {
    // Read from ATTENDRE_DISABLE when the options leave the switches unset...
    ScopedEnv disable("ATTENDRE_DISABLE", "shuffle,fp16");
    const Result<std::unique_ptr<Context>> context = Context::create(quiet_options());
    check_same_failure(context.status(), parsed.status(), ErrorCode::invalid_argument);
    // ...and not read at all when they set them.
    ContextOptions explicit_options = quiet_options();
    explicit_options.disabled_features = FeatureSet{}.add(Feature::subgroup_shuffle);
    const Result<std::unique_ptr<Context>> explicit_context = Context::create(explicit_options);
    REQUIRE(explicit_context.ok());
    CHECK((*explicit_context)->caps().disabled == *explicit_options.disabled_features);
    CHECK_FALSE((*explicit_context)->caps().subgroup_shuffle);
  }
  ScopedEnv validation("ATTENDRE_VALIDATION", "yes");
  ContextOptions from_env;  // validation unset: read from the environment
  check_same_failure(Context::create(from_env).status(), thrown([&] { (void)Context::create(from_env).value_or_throw(); }),
                     ErrorCode::invalid_argument);
}

TEST_CASE("vulkan status: a created context is the one the throwing constructor makes") {
  const ContextOptions options = quiet_options();
  const Result<std::unique_ptr<Context>> created = Context::create(options);
  REQUIRE(created.ok());
  const auto constructed_owner = Context::create(options).value_or_throw();
  const Context& constructed = *constructed_owner;
  const DeviceCaps &a = (*created)->caps(), &b = constructed.caps();
  CHECK(a.name == b.name);
  CHECK(a.kernel_style == b.kernel_style);
  CHECK(a.max_invocations == b.max_invocations);
  CHECK(a.max_storage_range == b.max_storage_range);
  CHECK(a.disabled == b.disabled);
  CHECK((*created)->device() != VK_NULL_HANDLE);
  const Result<std::vector<std::string>> devices = list_devices();
  REQUIRE(devices.ok());
  CHECK(*devices == list_devices().value_or_throw());
}

TEST_CASE("vulkan status: buffers past maxMemoryAllocationSize fail as values, the context's memory unchanged") {
  Context& context = test::gpu();
  const uint64_t too_large = context.caps().max_allocation + vk::kBufferGranule;
  const uint64_t held = context.device_memory_bytes();
  const Result<vk::Buffer> own = vk::Buffer::create(context, too_large, vk::MemoryIntent::device, "test huge");
  check_failure(own.status(), ErrorCode::out_of_device_memory);
  CHECK(own.status().message().rfind("buffer 'test huge' needs ", 0) == 0);

  vk::MemoryArena arena(context, too_large, "test arena");
  const Result<vk::Buffer> placed = vk::Buffer::create(arena, too_large, "test huge weights");
  check_failure(placed.status(), ErrorCode::out_of_device_memory);
  CHECK(placed.status().message().rfind("test huge weights needs ", 0) == 0);
  CHECK(context.device_memory_bytes() == held);
  CHECK(arena.reserved_bytes() == 0);

  // The arena is still usable: a buffer that fits is placed.
  const Result<vk::Buffer> small = vk::Buffer::create(arena, 1000, "test small weights");
  REQUIRE(small.ok());
  CHECK(small->size() == vk::rounded_bytes(1000));
  CHECK(arena.placed() == vk::MemoryArena::placed_bytes(small->size()));
}

TEST_CASE("vulkan status: a pipeline the device refuses fails as a value and is not cached") {
  Context& context = test::gpu();
  vk::PipelineKey key{shaders::ShaderId::add, 3, 0, context.caps().max_push_constants + 4, {128}, false};
  const size_t cached = vk::state_of(context).pipelines.size();
  const Result<const vk::ComputePipeline*> pipeline = vk::state_of(context).pipelines.get(key);
  check_failure(pipeline.status(), ErrorCode::unsupported);
  CHECK(pipeline.status().message().find("push-constant bytes, more than the device's") != std::string::npos);
  CHECK(vk::state_of(context).pipelines.size() == cached);
}

// An encoding no kernel decodes (GGUF's Q8_1).
constexpr ElementType kNoKernel = static_cast<ElementType>(9);

TEST_CASE("vulkan status: kernels report bad bindings and arguments as values") {
  Context& context = test::gpu();
  const kernels::KernelPlan plan = kernels::plan_kernels(context.caps());
  vk::DescriptorArena arena(context);
  const Result<vk::Buffer> buffer = vk::Buffer::create(context, 4096, vk::MemoryIntent::device, "test rows");
  REQUIRE(buffer.ok());
  // Output and input overlapping without being the same range.
  const vk::BufferBinding a{&*buffer, 0, 2048}, c{&*buffer, 1024, 2048};
  const Result<kernels::Add> add = kernels::Add::create(context, arena, plan, a, {}, c);
  REQUIRE_FALSE(add.ok());
  CHECK(add.status().code() == ErrorCode::invalid_argument);
  CHECK(add.status().message() == "add: output and input bindings overlap without being the same range");

  // The arena still binds: a norm in place, then a record with a bad epsilon.
  const vk::BufferBinding x{&*buffer, 0, 2048}, g{&*buffer, 2048, 2048};
  const Result<kernels::Norm> norm = kernels::Norm::create(context, arena, plan, NormKind::rms, x, g, x);
  REQUIRE(norm.ok());
  kernels::Norm::Args args;
  args.rows = 1;
  args.dim = 16;
  args.eps = -1.0f;
  args.x = args.y = kernels::RowRef::contiguous(16);
  Result<vk::Submission> submission = vk::Submission::create(context);
  REQUIRE(submission.ok());
  vk::Submission& own = *submission;
  const Result<vk::CommandRecorder*> recorder = own.begin();
  REQUIRE(recorder.ok());
  const Status bad_eps = norm->record(**recorder, args);
  REQUIRE_FALSE(bad_eps.ok());
  CHECK(bad_eps.code() == ErrorCode::invalid_argument);
  CHECK(bad_eps.message() == "norm eps must not be negative");
  CHECK((*recorder)->counts().dispatches == 0);

  const Result<kernels::Select> select =
      kernels::Select::create(context, arena, plan, kernels::Select::Source::logits, {&*buffer, 0, 1024},
                              {&*buffer, 1024, 1024}, {&*buffer, 2048, 2048}, 64, 4);
  REQUIRE(select.ok());
  kernels::SelectTileParams bad_keep{};
  bad_keep.keep = 3;
  bad_keep.count = 64;
  const Status bad_keep_status = select->record(**recorder, bad_keep, 1);
  REQUIRE_FALSE(bad_keep_status.ok());
  CHECK(bad_keep_status.code() == ErrorCode::invalid_argument);
  CHECK(bad_keep_status.message().find("keep") != std::string::npos);
  CHECK((*recorder)->counts().dispatches == 0);
  CHECK(own.submit().ok());
  CHECK(own.wait().ok());

  const Result<shaders::ShaderId> missing =
      kernels::weight_variant(context, kernels::WeightKernel::gemm, kNoKernel, "W");
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.status().code() == ErrorCode::unsupported);
  CHECK(missing.status().message().find("W: ") == 0);
  CHECK(missing.status().message().find("weights have no decoding kernel") != std::string::npos);
  const Result<shaders::ShaderId> q8_0 =
      kernels::weight_variant(context, kernels::WeightKernel::matvec, ElementType::q8_0, "W");
  REQUIRE(q8_0.ok());
  CHECK(*q8_0 ==
        (kernels::q8_0_as_int8(context.caps()) ? shaders::ShaderId::matvec_q8_0_int8 : shaders::ShaderId::matvec_q8_0));
}

TEST_CASE("vulkan status: an add built and run through the value forms matches the float64 reference") {
  Context& context = test::gpu();
  const kernels::KernelPlan plan = kernels::plan_kernels(context.caps());
  std::mt19937_64 rng(7207);
  std::normal_distribution<float> normal;
  const uint32_t rows = 3, cols = 2 * plan.workgroup + 5;  // crosses workgroup boundaries
  const uint64_t n = uint64_t{rows} * cols;
  std::vector<float> values(2 * n);
  for (float& v : values) v = normal(rng);

  Result<vk::Buffer> upload = vk::Buffer::create(context, 8 * n, vk::MemoryIntent::upload, "test add staging");
  const uint64_t section = vk::rounded_bytes(4 * n);  // A, B and C each start on the storage offset alignment
  Result<vk::Buffer> rows_buffer = vk::Buffer::create(context, 3 * section, vk::MemoryIntent::device, "test add rows");
  Result<vk::Buffer> readback = vk::Buffer::create(context, 4 * n, vk::MemoryIntent::readback, "test add readback");
  REQUIRE(upload.ok());
  REQUIRE(rows_buffer.ok());
  REQUIRE(readback.ok());
  std::memcpy(upload->mapped(), values.data(), 8 * n);
  vk::DescriptorArena arena(context);
  const vk::BufferBinding a{&*rows_buffer, 0, 4 * n}, b{&*rows_buffer, section, 4 * n},
      c{&*rows_buffer, 2 * section, 4 * n};
  const Result<kernels::Add> add = kernels::Add::create(context, arena, plan, a, b, c);
  REQUIRE(add.ok());
  kernels::Add::Args args;
  args.rows = rows;
  args.cols = cols;
  args.a = args.b = args.c = kernels::RowRef::contiguous(cols);

  Result<vk::Submission> submission = vk::Submission::create(context);
  REQUIRE(submission.ok());
  const Result<vk::CommandRecorder*> recorder = submission->begin();
  REQUIRE(recorder.ok());
  vk::CommandRecorder& rec = **recorder;
  rec.copy(*upload, 0, *rows_buffer, 0, 4 * n);
  rec.copy(*upload, 4 * n, *rows_buffer, section, 4 * n);
  REQUIRE(add->record(rec, args).ok());
  rec.copy(*rows_buffer, 2 * section, *readback, 0, 4 * n);
  REQUIRE(submission->submit().ok());
  REQUIRE(submission->wait().ok());
  std::vector<float> sums(n);
  std::memcpy(sums.data(), readback->mapped(), 4 * n);
  size_t wrong = 0;
  for (uint64_t i = 0; i < n; ++i) {
    const double expected = static_cast<double>(values[i]) + static_cast<double>(values[n + i]);
    // One fp32 rounding of the exact sum.
    if (std::abs(static_cast<double>(sums[i]) - expected) > std::abs(expected) * 6e-8 + 1e-30) ++wrong;
  }
  CHECK(wrong == 0);
  test::check_no_validation_messages(context);
}

TEST_CASE("vulkan status: a wait past the fence timeout is device lost, and the submission stays usable") {
  ContextOptions options = quiet_options();  // the abandoned wait would leave the layer a fence in use
  options.fence_timeout_ms = 0;              // any wait for unfinished work times out
  const Result<std::unique_ptr<Context>> created = Context::create(options);
  REQUIRE(created.ok());
  Context& context = **created;
  const kernels::KernelPlan plan = kernels::plan_kernels(context.caps());
  vk::DescriptorArena arena(context);
  const uint32_t groups = 256, W = plan.workgroup;
  const Result<vk::Buffer> out =
      vk::Buffer::create(context, uint64_t{groups} * W * 16, vk::MemoryIntent::device, "test fma results");
  REQUIRE(out.ok());
  const Result<kernels::Kernel> fma =
      kernels::Kernel::make<kernels::BenchParams>(context, arena, shaders::ShaderId::bench_fma, {W}, {{&*out}});
  REQUIRE(fma.ok());
  Result<vk::Submission> submission = vk::Submission::create(context);
  REQUIRE(submission.ok());
  const Result<vk::CommandRecorder*> recorder = submission->begin();
  REQUIRE(recorder.ok());
  // About 50 ms of FMA on a 2-core CPU device; far longer than submit-to-wait.
  fma->dispatch(**recorder, kernels::BenchParams{0, 5000, 0.999f, 0.001f}, groups);
  REQUIRE(submission->submit().ok());
  const Result<bool> polled = submission->wait_for(submission->submitted(), 0);
  REQUIRE(polled.ok());
  CHECK_FALSE(*polled);  // a timeout of the caller's own is no error
  const Status lost = submission->wait();
  REQUIRE_FALSE(lost.ok());
  CHECK(lost.code() == ErrorCode::device_lost);
  CHECK(lost.message().find("did not finish a submission within 0 s") != std::string::npos);
  CHECK(submission->pending());  // never reused while the device may still run it
  // The device was only slow: once it finished, the same submission runs again.
  vk::vkDeviceWaitIdle(context.device());
  CHECK(submission->wait().ok());
  CHECK_FALSE(submission->pending());
  REQUIRE(submission->begin().ok());
  REQUIRE(submission->submit().ok());
  vk::vkDeviceWaitIdle(context.device());
  CHECK(submission->wait().ok());
  CHECK(submission->submitted() == 2);
}

}  // namespace
}  // namespace attendre
