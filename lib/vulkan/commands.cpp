#include "vulkan/commands.hpp"

#include "vulkan/buffer.hpp"
#include "vulkan/check.hpp"
#include "vulkan/context_state.hpp"
#include "core/try.hpp"

#include <attendre/shader_ids.hpp>

#include <attendre/embedding.hpp>
#include <attendre/error.hpp>

#include <algorithm>
#include <cstddef>
#include <utility>

namespace attendre::vk {

void CommandRecorder::attach(Profiler* profiler) {
  profiler_ = profiler;
  if (profiler_) profiler_->begin(cmd_);
}

void CommandRecorder::dispatch(const ComputePipeline& pipeline, VkDescriptorSet set, std::span<const BufferUse> uses,
                               const void* push, uint32_t push_bytes, uint32_t groups_x, uint32_t groups_y,
                               uint32_t groups_z, const char* label) {
  if (groups_x == 0 || groups_y == 0 || groups_z == 0) return;  // nothing to do is not an error
  const char* name = label ? label : shaders::name(pipeline.key().shader).data();
  scratch_.clear();
  for (const BufferUse& u : uses)
    if (u.reads || u.writes) scratch_.push_back({u.buffer, u.offset, u.offset + u.size, u.reads, u.writes, name});
  // One logical access for all pieces: they run disjoint workgroups of one
  // grid, which touch disjoint data as the workgroups of one dispatch do.
  order(scratch_);
  vkCmdBindPipeline(cmd_, VK_PIPELINE_BIND_POINT_COMPUTE, pipeline.handle());
  vkCmdBindDescriptorSets(cmd_, VK_PIPELINE_BIND_POINT_COMPUTE, pipeline.layout(), 0, 1, &set, 0, nullptr);
  if (push_bytes) vkCmdPushConstants(cmd_, pipeline.layout(), VK_SHADER_STAGE_COMPUTE_BIT, 0, push_bytes, push);
  ++counts_.dispatches;
  const DispatchGrid grid{groups_x, groups_y, groups_z};
  bool first = true;
  for_each_piece(grid, pipeline.max_groups_per_dispatch(), [&](const DispatchGrid& base, const DispatchGrid& count) {
    if (first)
      vkCmdDispatch(cmd_, count.x, count.y, count.z);  // the first piece starts at the grid's origin
    else
      vkCmdDispatchBase(cmd_, base.x, base.y, base.z, count.x, count.y, count.z);
    ++counts_.pieces;
    if (profiler_) profiler_->mark(cmd_, name, first);
    first = false;
  });
}

void CommandRecorder::order(std::span<const BufferAccess> accesses) {
  if (derive_) {
    for (const BufferAccess& next : accesses) {
      const BufferAccess* earlier = pending_.conflict(next);
      if (!earlier) continue;
      if (label_) {
        record_barrier(std::string(next.command) + (next.writes ? " writes " : " reads ") + next.buffer->label() +
                       " [" + std::to_string(next.begin) + ", " + std::to_string(next.end) + ") after " +
                       earlier->command + (earlier->writes ? " wrote it" : " read it"));
      } else {
        record_barrier({});
      }
      break;
    }
  }
  for (const BufferAccess& a : accesses) {
    pending_.add(a);
    if (!a.buffer->mapped()) continue;
    auto note = [&](std::vector<const Buffer*>& list) {
      if (std::find(list.begin(), list.end(), a.buffer) == list.end()) list.push_back(a.buffer);
    };
    if (a.reads) note(host_reads_);
    if (a.writes) note(host_writes_);
  }
}

void CommandRecorder::record_barrier(const std::string& why) {
  if (label_ && !why.empty()) {
    VkDebugUtilsLabelEXT label{VK_STRUCTURE_TYPE_DEBUG_UTILS_LABEL_EXT};
    label.pLabelName = why.c_str();
    label_(cmd_, &label);
  }
  VkMemoryBarrier barrier{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
  barrier.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
  barrier.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_READ_BIT |
                          VK_ACCESS_TRANSFER_WRITE_BIT;
  const VkPipelineStageFlags stages = VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT;
  vkCmdPipelineBarrier(cmd_, stages, stages, 0, 1, &barrier, 0, nullptr, 0, nullptr);
  ++counts_.barriers;
  pending_.clear();
}

void CommandRecorder::barrier(const char* why) { record_barrier(why); }

void CommandRecorder::host_barrier() {
  VkMemoryBarrier barrier{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
  barrier.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
  barrier.dstAccessMask = VK_ACCESS_HOST_READ_BIT;
  vkCmdPipelineBarrier(cmd_, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
                       VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &barrier, 0, nullptr, 0, nullptr);
  ++counts_.barriers;
}

void CommandRecorder::copy(const Buffer& src, VkDeviceSize src_offset, const Buffer& dst, VkDeviceSize dst_offset,
                           VkDeviceSize bytes) {
  if (bytes == 0) return;
  const BufferAccess accesses[] = {{&src, src_offset, src_offset + bytes, true, false, "copy"},
                                   {&dst, dst_offset, dst_offset + bytes, false, true, "copy"}};
  order(accesses);
  VkBufferCopy region{src_offset, dst_offset, bytes};
  vkCmdCopyBuffer(cmd_, src.handle(), dst.handle(), 1, &region);
  ++counts_.copies;
}

void CommandRecorder::fill(const Buffer& dst, VkDeviceSize offset, VkDeviceSize bytes, uint32_t value) {
  if (bytes == 0) return;
  const BufferAccess access{&dst, offset, offset + bytes, false, true, "fill"};
  order({&access, 1});
  vkCmdFillBuffer(cmd_, dst.handle(), offset, bytes, value);
  ++counts_.copies;
}

Status CommandRecorder::update(const Buffer& dst, VkDeviceSize offset, VkDeviceSize bytes, const void* data) {
  if (bytes == 0) return {};
  ATTENDRE_REQUIRE(offset % 4 == 0 && bytes % 4 == 0,
                   "CommandRecorder::update: offset and size must be multiples of 4");
  const BufferAccess access{&dst, offset, offset + bytes, false, true, "update"};
  order({&access, 1});
  constexpr VkDeviceSize kPiece = 65536;  // vkCmdUpdateBuffer's limit per call
  const auto* bytes_in = static_cast<const std::byte*>(data);
  for (VkDeviceSize at = 0; at < bytes; at += kPiece) {
    vkCmdUpdateBuffer(cmd_, dst.handle(), offset + at, std::min(kPiece, bytes - at), bytes_in + at);
    ++counts_.copies;
  }
  return {};
}

void CommandRecorder::acquire() {
  // The application's commands are invisible to the tracker and may be of
  // any stage and any write (its shaders, copies, host writes before the
  // submission): the widest first scope orders them all before this work.
  VkMemoryBarrier barrier{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
  barrier.srcAccessMask = VK_ACCESS_MEMORY_WRITE_BIT;
  barrier.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_READ_BIT |
                          VK_ACCESS_TRANSFER_WRITE_BIT;
  vkCmdPipelineBarrier(cmd_, VK_PIPELINE_STAGE_ALL_COMMANDS_BIT,
                       VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT, 0, 1, &barrier, 0,
                       nullptr, 0, nullptr);
  ++counts_.barriers;
  pending_.clear();
}

void CommandRecorder::release(VkPipelineStageFlags stages, VkAccessFlags access) {
  // The host is always a consumer too: the finite-check flags this work
  // sets are read by the host once the application's submission completed.
  VkMemoryBarrier barrier{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
  barrier.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
  barrier.dstAccessMask = access | VK_ACCESS_HOST_READ_BIT;
  vkCmdPipelineBarrier(cmd_, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
                       stages | VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &barrier, 0, nullptr, 0, nullptr);
  ++counts_.barriers;
  pending_.clear();
}

void CommandRecorder::timestamp(const TimestampPool& pool, uint32_t index) {
  vkCmdWriteTimestamp(cmd_, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, pool.handle(), index);
}

void CommandRecorder::reset(const TimestampPool& pool) { vkCmdResetQueryPool(cmd_, pool.handle(), 0, pool.count()); }

// Each object is created into the submission under construction, whose
// destructor frees what exists if a later step fails.
Result<Submission> Submission::create(Context& context) {
  Submission s(&context);
  VkCommandBufferAllocateInfo info{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
  info.commandPool = vk::state_of(context).command_pool;
  info.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  info.commandBufferCount = 1;
  ATTENDRE_TRY(checked(vkAllocateCommandBuffers(context.device(), &info, &s.cmd_), "vkAllocateCommandBuffers"));
  VkFenceCreateInfo fence_info{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
  ATTENDRE_TRY(checked(vkCreateFence(context.device(), &fence_info, context.allocator(), &s.fence_), "vkCreateFence"));
  if (!context.caps().timeline_semaphore) return s;
  std::vector<ContextState::Timeline>& spare = vk::state_of(context).spare_timelines;
  if (!spare.empty()) {  // a finished Submission's, continued from the value it reached
    s.timeline_ = spare.back().semaphore;
    s.timeline_base_ = spare.back().value;
    spare.pop_back();
    return s;
  }
  VkSemaphoreTypeCreateInfoKHR type{VK_STRUCTURE_TYPE_SEMAPHORE_TYPE_CREATE_INFO_KHR};
  type.semaphoreType = VK_SEMAPHORE_TYPE_TIMELINE_KHR;
  type.initialValue = 0;
  VkSemaphoreCreateInfo semaphore_info{VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO};
  semaphore_info.pNext = &type;
  ATTENDRE_TRY(checked(vkCreateSemaphore(context.device(), &semaphore_info, context.allocator(), &s.timeline_),
                       "vkCreateSemaphore"));
  vk::state_of(context).timelines.push_back(s.timeline_);
  return s;
}

Submission::Submission(Submission&& other) noexcept
    : context_(std::exchange(other.context_, nullptr)),
      cmd_(std::exchange(other.cmd_, VK_NULL_HANDLE)),
      fence_(std::exchange(other.fence_, VK_NULL_HANDLE)),
      timeline_(std::exchange(other.timeline_, VK_NULL_HANDLE)),
      timeline_base_(other.timeline_base_),
      recorder_(std::move(other.recorder_)),
      to_invalidate_(std::move(other.to_invalidate_)),
      pending_(std::exchange(other.pending_, false)),
      recording_(std::exchange(other.recording_, false)),
      submitted_(other.submitted_) {}

Submission::~Submission() {
  if (!context_) return;  // moved from
  // Never destroy work in flight. A device that does not finish it in time
  // is lost: its fence and command buffer are left to the device's
  // destruction rather than freed under its feet (or waited for forever).
  if (pending_ &&
      vkWaitForFences(context_->device(), 1, &fence_, VK_TRUE, vk::state_of(*context_).fence_timeout_ns) != VK_SUCCESS)
    return;
  if (timeline_) vk::state_of(*context_).spare_timelines.push_back({timeline_, timeline_value(submitted_)});
  if (fence_) vkDestroyFence(context_->device(), fence_, context_->allocator());
  if (cmd_) vkFreeCommandBuffers(context_->device(), vk::state_of(*context_).command_pool, 1, &cmd_);
}

Result<CommandRecorder*> Submission::begin() {
  ATTENDRE_TRY(wait());
  ATTENDRE_TRY(checked(vkResetCommandBuffer(cmd_, 0), "vkResetCommandBuffer"));
  VkCommandBufferBeginInfo info{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
  info.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
  ATTENDRE_TRY(checked(vkBeginCommandBuffer(cmd_, &info), "vkBeginCommandBuffer"));
  recording_ = true;
  recorder_.emplace(cmd_, vk::state_of(*context_).debug_label);
  // Earlier submissions (this one's previous step, uploads, other objects'
  // steps on the queue) wrote buffers this one reads: the tracker cannot see
  // them, so one barrier orders all of them before this submission.
  recorder_->barrier("earlier submissions' writes are visible to this one");
  return &*recorder_;
}

Status Submission::check_waits(std::span<const SemaphoreWait> waits) const {
  for (const SemaphoreWait& w : waits) {
    ATTENDRE_REQUIRE(w.semaphore != VK_NULL_HANDLE, "submit: a semaphore wait has no semaphore");
    ATTENDRE_REQUIRE(w.stages != 0, "submit: a semaphore wait has no stages");
    if (w.value != 0 && !timeline_)
      return {ErrorCode::unsupported, "submit: a wait for timeline value " + std::to_string(w.value) +
                                          " needs timeline semaphores, which this context lacks (absent or disabled)"};
  }
  return {};
}

Status Submission::submit(std::span<const SemaphoreWait> waits) {
  ATTENDRE_REQUIRE(recording_, "Submission::submit without begin");
  recording_ = false;
  if (!recorder_->host_writes().empty()) recorder_->host_barrier();
  ATTENDRE_TRY(checked(vkEndCommandBuffer(cmd_), "vkEndCommandBuffer"));
  for (const Buffer* b : recorder_->host_reads()) ATTENDRE_TRY(b->flush());
  to_invalidate_ = recorder_->host_writes();
  ATTENDRE_TRY(checked(vkResetFences(context_->device(), 1, &fence_), "vkResetFences"));
  VkSubmitInfo info{VK_STRUCTURE_TYPE_SUBMIT_INFO};
  info.commandBufferCount = 1;
  info.pCommandBuffers = &cmd_;
  std::vector<VkSemaphore> wait_semaphores;
  std::vector<uint64_t> wait_values;
  std::vector<VkPipelineStageFlags> wait_stages;
  for (const SemaphoreWait& w : waits) {
    wait_semaphores.push_back(w.semaphore);
    wait_values.push_back(w.value);
    wait_stages.push_back(w.stages);
  }
  info.waitSemaphoreCount = static_cast<uint32_t>(waits.size());
  info.pWaitSemaphores = wait_semaphores.data();
  info.pWaitDstStageMask = wait_stages.data();
  // With a timeline, submission n signals timeline_value(n) (binary waits ignore their values).
  const uint64_t signal_value = timeline_value(submitted_ + 1);
  VkTimelineSemaphoreSubmitInfoKHR timeline_info{VK_STRUCTURE_TYPE_TIMELINE_SEMAPHORE_SUBMIT_INFO_KHR};
  timeline_info.waitSemaphoreValueCount = info.waitSemaphoreCount;
  timeline_info.pWaitSemaphoreValues = wait_values.data();
  timeline_info.signalSemaphoreValueCount = 1;
  timeline_info.pSignalSemaphoreValues = &signal_value;
  if (timeline_) {
    info.pNext = &timeline_info;
    info.signalSemaphoreCount = 1;
    info.pSignalSemaphores = &timeline_;
  }
  ATTENDRE_TRY(checked(vkQueueSubmit(context_->queue(), 1, &info, fence_), "vkQueueSubmit"));
  pending_ = true;
  ++submitted_;
  return {};
}

Result<bool> Submission::finished(uint64_t n) const {
  if (n < submitted_ || !pending_) return true;
  const VkResult r = vkGetFenceStatus(context_->device(), fence_);
  if (r == VK_NOT_READY) return false;
  ATTENDRE_TRY(checked(r, "vkGetFenceStatus"));
  return true;
}

Result<bool> Submission::wait_for(uint64_t n, uint64_t timeout_ns) {
  if (n < submitted_ || !pending_) return true;
  const VkResult r = vkWaitForFences(context_->device(), 1, &fence_, VK_TRUE, timeout_ns);
  if (r == VK_TIMEOUT) return false;
  ATTENDRE_TRY(checked(r, "vkWaitForFences"));
  ATTENDRE_TRY(wait());  // signalled: returns at once, invalidating what the host reads
  return true;
}

Status Submission::wait() {
  if (!pending_) return {};
  // The submission stays pending when the wait fails: its objects must not
  // be reused or destroyed while the device may still run it.
  const VkResult r = vkWaitForFences(context_->device(), 1, &fence_, VK_TRUE, vk::state_of(*context_).fence_timeout_ns);
  if (r == VK_TIMEOUT)
    return {ErrorCode::device_lost, "the device did not finish a submission within " +
                                        std::to_string(vk::state_of(*context_).fence_timeout_ns / 1000000000) +
                                        " s (ContextOptions::fence_timeout_ms): treated as lost"};
  ATTENDRE_TRY(checked(r, "vkWaitForFences"));
  pending_ = false;
  std::vector<const Buffer*> written = std::move(to_invalidate_);
  to_invalidate_.clear();
  for (const Buffer* b : written) ATTENDRE_TRY(b->invalidate());
  return {};
}

Result<Profiler> Profiler::create(Context& context, uint32_t max_dispatches) {
  ATTENDRE_TRY_ASSIGN(TimestampPool pool, TimestampPool::create(context, max_dispatches + 1));
  return Profiler(std::move(pool));
}

void Profiler::begin(VkCommandBuffer cmd) {
  marks_.clear();
  written_ = 0;
  vkCmdResetQueryPool(cmd, pool_.handle(), 0, pool_.count());
  vkCmdWriteTimestamp(cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, pool_.handle(), 0);
  started_ = true;
}

void Profiler::mark(VkCommandBuffer cmd, const char* label, bool first) {
  if (written_ + 1 >= pool_.count()) return;  // past capacity: later pieces go unmeasured
  ++written_;
  if (first || marks_.empty())
    marks_.push_back({label, written_, written_});
  else
    marks_.back().last = written_;
  vkCmdWriteTimestamp(cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, pool_.handle(), written_);
}

Result<std::vector<Profiler::Sample>> Profiler::read() const {
  std::vector<Sample> samples;
  if (!started_ || marks_.empty()) return samples;
  ATTENDRE_TRY_ASSIGN(const std::vector<double> ns, pool_.read_ns(written_ + 1));
  for (const Mark& m : marks_) {
    Sample s{m.label, ns[m.last] - ns[m.first - 1], m.last - m.first + 1, 0.0};
    for (uint32_t t = m.first; t <= m.last; ++t) s.longest_piece_ns = std::max(s.longest_piece_ns, ns[t] - ns[t - 1]);
    samples.push_back(std::move(s));
  }
  return samples;
}

TimestampPool::TimestampPool(Context& context, uint32_t count, uint64_t mask)
    : device_(context.device()),
      allocator_(context.allocator()),
      count_(count),
      period_ns_(context.caps().timestamp_period_ns),
      mask_(mask) {}

Result<TimestampPool> TimestampPool::create(Context& context, uint32_t count) {
  if (!context.caps().timestamps) return Status{ErrorCode::unsupported, "the device's compute queue has no timestamps"};
  const uint32_t bits = context.caps().timestamp_valid_bits;
  TimestampPool pool(context, count, bits >= 64 ? ~uint64_t{0} : ((uint64_t{1} << bits) - 1));
  VkQueryPoolCreateInfo info{VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO};
  info.queryType = VK_QUERY_TYPE_TIMESTAMP;
  info.queryCount = count;
  ATTENDRE_TRY(checked(vkCreateQueryPool(pool.device_, &info, pool.allocator_, &pool.pool_), "vkCreateQueryPool"));
  return pool;
}

TimestampPool::TimestampPool(TimestampPool&& other) noexcept
    : device_(other.device_),
      allocator_(other.allocator_),
      pool_(std::exchange(other.pool_, VK_NULL_HANDLE)),
      count_(other.count_),
      period_ns_(other.period_ns_),
      mask_(other.mask_) {}

TimestampPool::~TimestampPool() {
  if (pool_) vkDestroyQueryPool(device_, pool_, allocator_);
}

Result<std::vector<double>> TimestampPool::read_ns(uint32_t count) const {
  if (count == 0 || count > count_) count = count_;
  std::vector<uint64_t> ticks(count);
  ATTENDRE_TRY(checked(vkGetQueryPoolResults(device_, pool_, 0, count, ticks.size() * sizeof(uint64_t), ticks.data(),
                                             sizeof(uint64_t), VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT),
                       "vkGetQueryPoolResults"));
  std::vector<double> ns(count);
  for (uint32_t i = 0; i < count; ++i)
    ns[i] = static_cast<double>((ticks[i] - ticks[0]) & mask_) * period_ns_;
  return ns;
}

}  // namespace attendre::vk

namespace attendre {

Result<bool> Ticket::ready() const {
  if (!submission_) return true;
  return submission_->finished(submitted_);
}

Result<bool> Ticket::wait(uint64_t timeout_ns) const {
  if (!submission_) return true;
  return submission_->wait_for(submitted_, timeout_ns);
}

}  // namespace attendre
