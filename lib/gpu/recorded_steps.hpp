// What gpu::Layer::record and gpu::Stack::record share (docs/architecture.md,
// "Recording into an application's command buffer"): checks of the
// application's buffer ranges, runs of valid rows (the only rows read from
// or written to its buffers), and the finite checks of recorded steps, read
// at the object's next wait.
#pragma once

#include "gpu/finite_checks.hpp"
#include "gpu/query_ring.hpp"
#include "vulkan/commands.hpp"
#include "core/fail.hpp"

#include <attendre/embedding.hpp>

#include <algorithm>
#include <string>
#include <vector>

namespace attendre::gpu {

inline void check_range(const BufferRange& range, uint64_t bytes, const char* what) {
  require(range.buffer != VK_NULL_HANDLE, std::string("record: the ") + what + " range has no buffer");
  require(range.offset % 4 == 0, std::string("record: the ") + what + " range's offset is not a multiple of 4");
  require(range.size >= bytes, std::string("record: the ") + what + " range holds " + std::to_string(range.size) +
                                   " bytes, needs " + std::to_string(bytes));
}

// Calls f(begin, end) for each run of consecutive valid rows.
template <class F>
void for_valid_runs(const std::vector<QueryMeta>& rows, F f) {
  for (uint32_t r = 0; r < rows.size();) {
    if (!rows[r].valid) {
      ++r;
      continue;
    }
    uint32_t end = r;
    while (end < rows.size() && rows[end].valid) ++end;
    f(r, end);
    r = end;
  }
}

// Steps recorded into applications' command buffers whose finite checks are
// still to be read, and the host-visible buffers they wrote.
class RecordedSteps {
 public:
  // After a step's commands were recorded (release() included).
  void add(const vk::CommandRecorder& rec) {
    for (const vk::Buffer* b : rec.host_writes())
      if (std::find(host_writes_.begin(), host_writes_.end(), b) == host_writes_.end()) host_writes_.push_back(b);
    unverified_ = true;
  }
  // The application submitted the recorded steps to the context's queue
  // (record()'s contract): an empty submission of `own` after them signals
  // its fence only once they completed, so only our own fence is waited on.
  // Then their non-finite values are reported as `what`.
  void wait(vk::Submission& own, const FiniteChecks& checks, const std::string& what) {
    if (!unverified_) return;
    own.begin();
    own.submit();
    own.wait();
    for (const vk::Buffer* b : host_writes_) b->invalidate();
    unverified_ = false;
    checks.verify(what);
  }

 private:
  bool unverified_ = false;
  std::vector<const vk::Buffer*> host_writes_;
};

}  // namespace attendre::gpu
