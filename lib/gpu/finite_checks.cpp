#include "gpu/finite_checks.hpp"

#include "gpu/layouts.hpp"
#include "core/fail.hpp"

#include <attendre/error.hpp>

#include <cstring>

namespace attendre::gpu {

// Each site's flag word heads a section of its own, so that checks of
// different sites write disjoint ranges and need no barrier between them.
FiniteChecks::FiniteChecks(Context& context, uint32_t max_sites)
    : context_(context),
      plan_(kernels::plan_kernels(context.caps())),
      flags_(context, uint64_t{max_sites} * kSectionWords * 4, vk::MemoryIntent::readback, "finite flags"),
      arena_(std::make_unique<vk::DescriptorArena>(context)) {
  std::memset(flags_.mapped(), 0, flags_.size());
}

uint32_t FiniteChecks::add(std::string stage, vk::BufferBinding values) {
  const auto site = static_cast<uint32_t>(stages_.size());
  require(uint64_t{site + 1} * kSectionWords * 4 <= flags_.size(), "FiniteChecks: more sites than planned");
  stages_.push_back(std::move(stage));
  kernels_.emplace_back(context_, *arena_, plan_, values, vk::BufferBinding::words(flags_, uint64_t{site} * kSectionWords, 1));
  return site;
}

void FiniteChecks::record(vk::CommandRecorder& recorder, uint32_t site, uint32_t first, uint32_t count) const {
  kernels_[site].record(recorder, first, count);
}

void FiniteChecks::verify(const std::string& step) const {
  auto* words = static_cast<uint32_t*>(flags_.mapped());
  for (size_t site = 0; site < stages_.size(); ++site) {
    if (words[site * kSectionWords] == 0) continue;
    std::memset(words, 0, flags_.size());
    fail(ErrorCode::numerical_error, step + ": non-finite values (NaN or infinity) in " + stages_[site]);
  }
}

}  // namespace attendre::gpu
