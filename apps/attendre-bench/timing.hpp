// GPU timing of one recorded piece of work: timestamps around it, median
// of repeats after a warm-up (which also absorbs pipeline compilation).
#pragma once

#include "stats.hpp"

#include "vulkan/commands.hpp"

#include <attendre/context.hpp>

#include <vector>

namespace bench {

// Median GPU milliseconds of `repeats` submissions of what `record(recorder)`
// records, each between two timestamps, after one warm-up submission.
template <class Record>
double time_dispatch(attendre::Context& context, uint32_t repeats, Record record) {
  attendre::vk::TimestampPool pool = attendre::vk::TimestampPool::create(context, 2).value_or_throw();
  attendre::vk::Submission submission = attendre::vk::Submission::create(context).value_or_throw();
  std::vector<double> ms;
  for (uint32_t r = 0; r <= repeats; ++r) {
    attendre::vk::CommandRecorder& rec = *submission.begin().value_or_throw();
    rec.reset(pool);
    rec.timestamp(pool, 0);
    record(rec);
    rec.timestamp(pool, 1);
    submission.submit().or_throw();
    submission.wait().or_throw();
    if (r > 0) ms.push_back(pool.read_ns().value_or_throw()[1] * 1e-6);
  }
  return median(ms);
}

}  // namespace bench
