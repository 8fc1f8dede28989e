#include "gpu/finite_checks.hpp"

#include "gpu/layouts.hpp"
#include "core/fail.hpp"

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
      arena_(std::make_unique<vk::DescriptorArena>(context)) {
  require(slots >= 1, "FiniteChecks: no slot");
  for (uint32_t s = 0; s < slots; ++s) {
    flags_.emplace_back(context, uint64_t{max_sites} * kSectionWords * 4, vk::MemoryIntent::readback, "finite flags");
    std::memset(flags_.back().mapped(), 0, flags_.back().size());
    flags_.back().flush();
  }
}

uint32_t FiniteChecks::add(std::string stage, vk::BufferBinding values) {
  const auto site = static_cast<uint32_t>(stages_.size());
  require(site < max_sites_, "FiniteChecks: more sites than planned");
  stages_.push_back(std::move(stage));
  for (const vk::Buffer& flags : flags_)
    kernels_.emplace_back(context_, *arena_, plan_, values, vk::BufferBinding::words(flags, uint64_t{site} * kSectionWords, 1));
  return site;
}

void FiniteChecks::use_slot(uint32_t slot) {
  require(slot < slots_, "FiniteChecks: no slot " + std::to_string(slot));
  slot_ = slot;
}

void FiniteChecks::record(vk::CommandRecorder& recorder, uint32_t site, uint32_t first, uint32_t count) const {
  kernels_[uint64_t{site} * slots_ + slot_].record(recorder, first, count);
}

void FiniteChecks::verify(const std::string& step, uint32_t slot) const {
  const vk::Buffer& flags = flags_.at(slot);
  auto* words = static_cast<uint32_t*>(flags.mapped());
  for (size_t site = 0; site < stages_.size(); ++site) {
    if (words[site * kSectionWords] == 0) continue;
    std::memset(words, 0, flags.size());
    flags.flush();  // the slot is idle: its next submission starts from zeros
    fail(ErrorCode::numerical_error, step + ": non-finite values (NaN or infinity) in " + stages_[site]);
  }
}

uint64_t FiniteChecks::device_bytes() const {
  uint64_t bytes = 0;
  for (const vk::Buffer& flags : flags_) bytes += flags.size();
  return bytes;
}

}  // namespace attendre::gpu
