// One read of the document through the stack under one memory
// configuration: the chunks streamed in, snapshots of every block at the
// sampled steps (retention map, progress, yardstick), then the drain or
// flush, the final memories and the backend's answer.
#pragma once

#include "backend.hpp"
#include "document.hpp"
#include "progress.hpp"
#include "results.hpp"
#include "schedule.hpp"
#include "yardstick.hpp"

#include <attendre/context.hpp>

namespace reader {

struct ReadSetup {
  Backend& backend;
  Document& document;
  const Schedule& schedule;
  attendre::Context* device;     // null: the float64 reference stack
  const Yardstick* yardstick;    // null: no retained mass
  Progress& progress;
  size_t runs = 1;               // for the progress label
};

RunResult read_document(const ReadSetup& setup, const attendre::StackConfig& config, const PolicyList& policies,
                        size_t run);

}  // namespace reader
