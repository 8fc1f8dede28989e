#include "gpu/finite_checks.hpp"

#include "gpu/layouts.hpp"
#include "core/numerics.hpp"
#include "core/try.hpp"

#include <attendre/error.hpp>

#include <cstring>
#include <string>

namespace attendre::gpu {

// Each site's flag word heads a section of its own, so that checks of
// different sites write disjoint ranges and need no barrier between them.
FiniteChecks::FiniteChecks(Context& context, uint32_t max_sites, uint32_t slots)
    : context_(context),
      plan_(kernels::plan_kernels(context.caps())),
      max_sites_(max_sites),
      slots_(slots),
      arena_(std::make_unique<vk::DescriptorArena>(context)) {}

Result<std::unique_ptr<FiniteChecks>> FiniteChecks::create(Context& context, uint32_t max_sites, uint32_t slots) {
  ATTENDRE_REQUIRE(slots >= 1, "FiniteChecks: no slot");
  std::unique_ptr<FiniteChecks> checks(new FiniteChecks(context, max_sites, slots));
  for (uint32_t s = 0; s < slots; ++s) {
    ATTENDRE_TRY_ASSIGN(vk::Buffer flags, vk::Buffer::create(context, uint64_t{max_sites} * kSectionWords * 4,
                                                             vk::MemoryIntent::readback, "finite flags"));
    std::memset(flags.mapped(), 0, flags.size());
    ATTENDRE_TRY(flags.flush());
    checks->flags_.push_back(std::move(flags));
  }
  return checks;
}

Result<uint32_t> FiniteChecks::add(std::string stage, vk::BufferBinding values) {
  const auto site = static_cast<uint32_t>(stages_.size());
  ATTENDRE_REQUIRE(site < max_sites_, "FiniteChecks: more sites than planned");
  std::vector<kernels::CheckFinite> made;  // the site's kernel per slot, kept only when every one was made
  for (const vk::Buffer& flags : flags_) {
    ATTENDRE_TRY_ASSIGN(kernels::CheckFinite kernel,
                        kernels::CheckFinite::create(context_, *arena_, plan_, values,
                                                     vk::BufferBinding::words(flags, uint64_t{site} * kSectionWords, 1)));
    made.push_back(std::move(kernel));
  }
  stages_.push_back(std::move(stage));
  values_.push_back(values);
  for (kernels::CheckFinite& kernel : made) kernels_.push_back(std::move(kernel));
  return site;
}

Result<uint32_t> FiniteChecks::add_pair(uint32_t site_a, uint32_t site_b) {
  ATTENDRE_REQUIRE(site_a < stages_.size() && site_b < stages_.size() && site_a != site_b,
                   "FiniteChecks: a pair of two sites added before");
  const auto pair = static_cast<uint32_t>(pairs_.size() / slots_);
  std::vector<kernels::CheckFinite> made;
  for (const vk::Buffer& flags : flags_) {
    ATTENDRE_TRY_ASSIGN(kernels::CheckFinite kernel,
                        kernels::CheckFinite::create_pair(
                            context_, *arena_, plan_, values_[site_a],
                            vk::BufferBinding::words(flags, uint64_t{site_a} * kSectionWords, 1), values_[site_b],
                            vk::BufferBinding::words(flags, uint64_t{site_b} * kSectionWords, 1)));
    made.push_back(std::move(kernel));
  }
  for (kernels::CheckFinite& kernel : made) pairs_.push_back(std::move(kernel));
  return pair;
}

void FiniteChecks::record(vk::CommandRecorder& recorder, uint32_t site, uint32_t first, uint32_t count) const {
  kernels_[uint64_t{site} * slots_ + slot_].record(recorder, first, count);
}

void FiniteChecks::record_pair(vk::CommandRecorder& recorder, uint32_t pair, uint32_t first_a, uint32_t count_a,
                               uint32_t first_b, uint32_t count_b) const {
  pairs_[uint64_t{pair} * slots_ + slot_].record(recorder, first_a, count_a, first_b, count_b);
}

Status FiniteChecks::verify(const std::string& step, uint32_t slot) const {
  const vk::Buffer& flags = flags_[slot];
  auto* words = static_cast<uint32_t*>(flags.mapped());
  for (size_t site = 0; site < stages_.size(); ++site) {
    if (words[site * kSectionWords] == 0) continue;
    std::memset(words, 0, flags.size());
    ATTENDRE_TRY(flags.flush());  // the slot is idle: its next submission starts from zeros
    return numerics::non_finite(step, stages_[site]);
  }
  return {};
}

uint64_t FiniteChecks::device_bytes() const {
  uint64_t bytes = 0;
  for (const vk::Buffer& flags : flags_) bytes += flags.size();
  return bytes;
}

}  // namespace attendre::gpu
