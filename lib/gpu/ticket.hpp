// Makes and reads tickets (attendre/embedding.hpp) inside the library.
#pragma once

#include "vulkan/commands.hpp"

#include <attendre/embedding.hpp>

namespace attendre {

struct TicketAccess {
  // A ticket for the submission `submission` just made, step `step`.
  static Ticket make(vk::Submission& submission, uint64_t step) {
    Ticket t;
    t.submission_ = &submission;
    t.submitted_ = submission.submitted();
    t.step_ = step;
    return t;
  }
};

}  // namespace attendre
