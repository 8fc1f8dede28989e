// One of the two sets of host-side resources a step submitted without
// blocking uses (double-buffered upload and readback: the host fills one
// while the device runs the step of the other), owned by gpu::StepExecutor
// (gpu/step_executor.hpp); its owner keeps, per slot, what its result()
// decodes of the step.
#pragma once

#include "core/try.hpp"
#include "vulkan/buffer.hpp"
#include "vulkan/commands.hpp"

#include <attendre/context.hpp>
#include <attendre/status.hpp>

#include <cstdint>
#include <string>

namespace attendre::gpu {

struct SubmitSlot {
  static Result<SubmitSlot> create(Context& ctx, uint32_t slot_index, uint64_t upload_bytes, const char* upload_label,
                                   uint64_t readback_bytes, const char* readback_label) {
    ATTENDRE_TRY_ASSIGN(vk::Buffer upload, vk::Buffer::create(ctx, upload_bytes, vk::MemoryIntent::upload, upload_label));
    ATTENDRE_TRY_ASSIGN(vk::Buffer readback,
                        vk::Buffer::create(ctx, readback_bytes, vk::MemoryIntent::readback, readback_label));
    ATTENDRE_TRY_ASSIGN(vk::Submission submission, vk::Submission::create(ctx));
    return SubmitSlot(slot_index, std::move(upload), std::move(readback), std::move(submission));
  }

  uint32_t index;  // in the executor's slots, and the finite checks' slot its steps set
  vk::Buffer upload, readback;  // the step's upload image, and what it reads back
  vk::Submission submission;
  uint64_t step = 0;         // the step submitted last from this slot
  std::string name;          // its name in errors ("step 3", "retrieval 2": gpu::StepNames)
  bool uncollected = false;  // result() not called yet
  bool unverified = false;   // its finite checks are still to be read

 private:
  SubmitSlot(uint32_t slot_index, vk::Buffer upload_buffer, vk::Buffer readback_buffer, vk::Submission own)
      : index(slot_index),
        upload(std::move(upload_buffer)),
        readback(std::move(readback_buffer)),
        submission(std::move(own)) {}
};

}  // namespace attendre::gpu
