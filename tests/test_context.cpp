// The context's switches and failure modes: environment variables that
// reject values they do not understand, and a fence wait that gives up.
#include "support.hpp"

#include "kernels/kernel_plan.hpp"
#include "interface/bench.h"
#include "kernels/kernel.hpp"
#include "vulkan/api.hpp"
#include "vulkan/buffer.hpp"
#include "vulkan/commands.hpp"

#include <attendre/error.hpp>

#include <doctest/doctest.h>

#include <cstdlib>
#include <string>

namespace attendre {
namespace {

// Sets an environment variable for the scope, then restores it.
struct ScopedEnv {
  std::string name, old;
  bool had = false;
  ScopedEnv(const char* n, const char* value) : name(n) {
    if (const char* v = std::getenv(n)) old = v, had = true;
    setenv(n, value, 1);
  }
  ~ScopedEnv() { had ? setenv(name.c_str(), old.c_str(), 1) : unsetenv(name.c_str()); }
};

std::string context_error() {
  try {
    Context context;
  } catch (const Error& e) {
    CHECK(e.code() == ErrorCode::invalid_argument);
    return e.what();
  }
  return "";
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
  ScopedEnv off("ATTENDRE_VALIDATION", "0");
  ScopedEnv limits("ATTENDRE_PORTABLE_LIMITS", "0");
  CHECK_NOTHROW(Context());
}

TEST_CASE("context: a submission the device does not finish within the fence timeout is reported as device lost") {
  ContextOptions options;
  options.validation = Validation::off;  // the abandoned fence is left to the device's destruction
  options.fence_timeout_ms = 0;          // any wait for unfinished work times out
  Context context(options);
  const kernels::KernelPlan plan = kernels::plan_kernels(context.caps());
  vk::DescriptorArena arena(context);
  const uint32_t groups = 256, W = plan.workgroup;
  vk::Buffer out(context, uint64_t{groups} * W * 16, vk::MemoryIntent::device, "test fma results");
  const kernels::Kernel fma =
      kernels::Kernel::make<kernels::BenchParams>(context, arena, shaders::ShaderId::bench_fma, {W}, {{&out}});
  vk::Submission submission(context);
  vk::CommandRecorder& rec = submission.begin();
  // About 0.2 s of FMA on a 2-core CPU device; far longer than submit-to-wait.
  fma.dispatch(rec, kernels::BenchParams{0, 20000, 0.999f, 0.001f}, groups);
  submission.submit();
  try {
    submission.wait();
    FAIL("the wait did not time out");
  } catch (const Error& e) {
    CHECK(e.code() == ErrorCode::device_lost);
    CHECK(std::string(e.what()).find("did not finish a submission within 0 s") != std::string::npos);
  }
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
  Context context(options);
  vk::Buffer upload(context, 64, vk::MemoryIntent::upload, "test upload");
  vk::Buffer readback(context, 64, vk::MemoryIntent::readback, "test readback");
  auto* host = static_cast<uint32_t*>(upload.mapped());
  host[0] = 7u;
  upload.invalidate();  // no flush: the device's copy never saw the 7
  CHECK(host[0] != 7u);
  host[0] = 42u;
  // A submission flushes what its commands read and invalidates what they wrote.
  vk::Submission submission(context);
  vk::CommandRecorder& rec = submission.begin();
  rec.copy(upload, 0, readback, 0, 64);
  submission.submit();
  submission.wait();
  CHECK(static_cast<const uint32_t*>(readback.mapped())[0] == 42u);
  test::check_no_validation_messages(context);
}

}  // namespace
}  // namespace attendre
