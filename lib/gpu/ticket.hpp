// Makes and reads tickets (attendre/embedding.hpp) inside the library.
#pragma once

#include "vulkan/commands.hpp"
#include "core/try.hpp"

#include <attendre/embedding.hpp>

#include <string>

namespace attendre {

struct TicketAccess {
  // A ticket for the submission `submission` just made, step `step`.
  static Ticket make(vk::Submission& submission, uint64_t step) {
    Ticket t;
    t.submission_ = &submission;
    t.submitted_ = submission.submitted();
    t.step_ = step;
    t.semaphore_ = submission.timeline();
    t.value_ = submission.timeline() ? submission.timeline_value(submission.submitted()) : 0;
    return t;
  }
  // Fails (invalid_argument) unless `ticket` may be collected from the slot
  // of `submission` that last held step `slot_step`: it came from that
  // object, and its result was neither collected nor overwritten since.
  static Status check_collectable(const Ticket& ticket, const vk::Submission& submission, uint64_t slot_step,
                                  bool uncollected) {
    ATTENDRE_REQUIRE(ticket.submission_ == &submission, "result: the ticket comes from another object's submit");
    ATTENDRE_REQUIRE(slot_step == ticket.step_ && uncollected,
                     "step " + std::to_string(ticket.step_) +
                         "'s result was collected already or overwritten (collect it before the step after next)");
    return {};
  }
};

}  // namespace attendre
