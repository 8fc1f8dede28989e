// Device results checked for NaN and infinity before anyone uses them: each
// stage of a step that produces values (attention outputs, policy scores, a
// block's rows, logits) is a site with its own flag word, set on the device
// by check_finite.comp. After the step's submission completed, verify()
// reports the first flagged site in recording order as an Error
// (numerical_error) naming the step and the stage, so that a NaN is never
// handed out as an answer.
#pragma once

#include "kernels/check_finite.hpp"
#include "vulkan/buffer.hpp"

#include <memory>
#include <string>
#include <vector>

namespace attendre::gpu {

class FiniteChecks {
 public:
  FiniteChecks(Context& context, uint32_t max_sites);

  // A new site checking floats of `values`; `stage` names it in errors.
  uint32_t add(std::string stage, vk::BufferBinding values);
  // Records the check of `count` floats from word `first` of the site's values.
  void record(vk::CommandRecorder& recorder, uint32_t site, uint32_t first, uint32_t count) const;
  // After the submission holding the checks completed: throws
  // numerical_error "<step>: non-finite values in <stage>" for the first
  // flagged site, after clearing every flag for the next submission.
  void verify(const std::string& step) const;
  uint64_t device_bytes() const { return flags_.size(); }

 private:
  Context& context_;
  kernels::KernelPlan plan_;
  vk::Buffer flags_;  // one section per site, host-visible
  std::unique_ptr<vk::DescriptorArena> arena_;
  std::vector<std::string> stages_;
  std::vector<kernels::CheckFinite> kernels_;
};

}  // namespace attendre::gpu
