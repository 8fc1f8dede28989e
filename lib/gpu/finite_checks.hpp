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

#include <attendre/status.hpp>

#include <memory>
#include <string>
#include <vector>

namespace attendre::gpu {

// Steps in flight at once (a layer's or stack's two slots, and the steps
// recorded into an application's command buffers) each set flags of their
// own `slot`, a buffer of its own: a step still running never sets the flags
// the host reads for an earlier one, and clearing one slot's flags (on
// non-coherent memory, flushing them) never touches another's.
class FiniteChecks {
 public:
  // Fails when a flag buffer cannot be allocated; what was made is freed.
  static Result<std::unique_ptr<FiniteChecks>> create(Context& context, uint32_t max_sites, uint32_t slots = 1);

  // A new site checking floats of `values`; `stage` names it in errors.
  Result<uint32_t> add(std::string stage, vk::BufferBinding values);
  // The slot whose flags the checks recorded from now on set: the owner
  // selects it before recording a step (recording is single-threaded);
  // `slot` is below the slots it was made with.
  void use_slot(uint32_t slot) { slot_ = slot; }
  // Records the check of `count` floats from word `first` of the site's values.
  void record(vk::CommandRecorder& recorder, uint32_t site, uint32_t first, uint32_t count) const;
  // Two sites checked by one dispatch (each still flags its own word, so
  // verify() names the same stage): a pair index for record_pair. Sites a
  // and b were added before.
  Result<uint32_t> add_pair(uint32_t site_a, uint32_t site_b);
  void record_pair(vk::CommandRecorder& recorder, uint32_t pair, uint32_t first_a, uint32_t count_a, uint32_t first_b,
                   uint32_t count_b) const;
  // After the submission holding `slot`'s checks completed (its flags
  // invalidated): fails with numerical_error "<step>: non-finite values in
  // <stage>" for the first flagged site, after clearing the slot's flags
  // for its next submission.
  Status verify(const std::string& step, uint32_t slot = 0) const;
  uint64_t device_bytes() const;

 private:
  FiniteChecks(Context& context, uint32_t max_sites, uint32_t slots);

  Context& context_;
  kernels::KernelPlan plan_;
  uint32_t max_sites_, slots_, slot_ = 0;
  std::vector<vk::Buffer> flags_;  // per slot: one section per site, host-visible
  std::unique_ptr<vk::DescriptorArena> arena_;
  std::vector<std::string> stages_;
  std::vector<vk::BufferBinding> values_;       // [site]
  std::vector<kernels::CheckFinite> kernels_;  // [site][slot]
  std::vector<kernels::CheckFinite> pairs_;    // [pair][slot]
};

}  // namespace attendre::gpu
