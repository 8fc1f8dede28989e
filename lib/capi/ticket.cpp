// Tickets of steps submitted without blocking: polling, waiting, the
// timeline semaphore to chain on, and the C submit options.
#include "capi/capi.hpp"

using namespace attendre;
using namespace attendre::capi;

namespace attendre::capi {

Result<SubmitOptions> submit_options(const attendre_submit_options* options, const char* what) {
  SubmitOptions o;
  if (!options) return o;
  ATTENDRE_REQUIRE(options->wait_count == 0 || options->waits, std::string(what) + ": options.waits is NULL with wait_count " +
                                                                  std::to_string(options->wait_count));
  for (size_t i = 0; i < options->wait_count; ++i) {
    const attendre_semaphore_wait& w = options->waits[i];
    SemaphoreWait wait;
    wait.semaphore = handle_of<VkSemaphore>(w.semaphore);
    wait.value = w.value;
    if (w.stages != 0) wait.stages = w.stages;
    o.waits.push_back(wait);
  }
  o.outputs = buffer_range(options->outputs);
  return o;
}

}  // namespace attendre::capi

extern "C" {

void attendre_ticket_destroy(attendre_ticket* ticket) { delete ticket; }

attendre_status attendre_ticket_ready(const attendre_ticket* ticket, int* ready) {
  return guard([&]() -> Outcome {
    ATTENDRE_C_NEED(ticket, "attendre_ticket_ready: ticket");
    ATTENDRE_C_NEED(ready, "attendre_ticket_ready: ready");
    ATTENDRE_TRY_ASSIGN(const bool done, ticket->ticket.ready());
    *ready = done ? 1 : 0;
    return ATTENDRE_OK;
  });
}

attendre_status attendre_ticket_wait(const attendre_ticket* ticket, uint64_t timeout_ns, int* finished) {
  return guard([&]() -> Outcome {
    ATTENDRE_C_NEED(ticket, "attendre_ticket_wait: ticket");
    ATTENDRE_C_NEED(finished, "attendre_ticket_wait: finished");
    ATTENDRE_TRY_ASSIGN(const bool done, ticket->ticket.wait(timeout_ns));
    *finished = done ? 1 : 0;
    return ATTENDRE_OK;
  });
}

attendre_status attendre_ticket_step(const attendre_ticket* ticket, uint64_t* step) {
  return guard([&]() -> Outcome {
    ATTENDRE_C_NEED(ticket, "attendre_ticket_step: ticket");
    ATTENDRE_C_NEED(step, "attendre_ticket_step: step");
    *step = ticket->ticket.step();
    return ATTENDRE_OK;
  });
}

attendre_status attendre_ticket_semaphore(const attendre_ticket* ticket, uint64_t* semaphore, uint64_t* value) {
  return guard([&]() -> Outcome {
    ATTENDRE_C_NEED(ticket, "attendre_ticket_semaphore: ticket");
    const Ticket& t = ticket->ticket;
    ATTENDRE_C_NEED(semaphore, "attendre_ticket_semaphore: semaphore");
    ATTENDRE_C_NEED(value, "attendre_ticket_semaphore: value");
    if (!t.chainable())
      return failure(ATTENDRE_ERROR_UNSUPPORTED,
                     "attendre_ticket_semaphore: the context has no timeline semaphores (absent or disabled), "
                     "so tickets chain only through host waits");
    *semaphore = handle_value(t.semaphore());
    *value = t.value();
    return ATTENDRE_OK;
  });
}

attendre_status attendre_context_timeline(const attendre_context* context, int* timeline) {
  return guard([&]() -> Outcome {
    ATTENDRE_C_NEED(context, "attendre_context_timeline: context");
    ATTENDRE_C_NEED(timeline, "attendre_context_timeline: timeline");
    *timeline = context->context.caps().timeline_semaphore ? 1 : 0;
    return ATTENDRE_OK;
  });
}

}  // extern "C"
