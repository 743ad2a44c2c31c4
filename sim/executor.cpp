#include "sim/executor.hpp"

#include <algorithm>
#include <mutex>

#include <simgrid/s4u.hpp>

namespace ragged::sim {

namespace sg4 = simgrid::s4u;
using planner::BufferKind;
using planner::Op;
using planner::OpKind;
using planner::Stream;

namespace {

bool is_collective(OpKind kind) {
  return kind == OpKind::kAllGather || kind == OpKind::kReduceScatter || kind == OpKind::kAllReduce ||
         kind == OpKind::kAllToAll;
}

bool is_gathered(BufferKind kind) { return kind == BufferKind::kUnshardedParams || kind == BufferKind::kParamCopies; }

}  // namespace

Executor::Executor(const planner::Program& program, const ComputeModel& compute, CollectiveEngine& network,
                   CachingAllocator& allocator, FreePolicy free_policy, Mechanisms mechanisms, int rank)
    : program_(program),
      compute_(compute),
      network_(network),
      allocator_(allocator),
      free_policy_(free_policy),
      rank_(rank),
      host_costs_(mechanisms.host),
      share_(mechanisms.gpu),
      timings_(program.ops.size()),
      done_(program.ops.size(), 0),
      issued_(program.ops.size(), mechanisms.host.any() ? 0 : 1),
      last_issue_(mechanisms.host.any() ? program.ops.size() : 0, 0.0) {}

void Executor::spawn(sg4::Host* host) {
  mutex_ = sg4::Mutex::create();
  for (sg4::ConditionVariablePtr& woken : stream_woken_) woken = sg4::ConditionVariable::create();
  host_woken_ = sg4::ConditionVariable::create();
  stream_waits_for_.fill(kNotWaiting);
  stream_waits_done_.fill(kNotWaiting);
  share_.create();
  share_.on_collective_scale([this](double factor) { network_.scale_rank_links(rank_, factor); });
  if (host_costs_.any()) sg4::Actor::create("host", host, [this] { run_host(); });
  state_and_buffers_ = peak_state_and_buffers_ = program_.persistent.total();
  memory_.push_back({0.0, allocator_.allocated(), allocator_.reserved(), state_and_buffers_});
  for (size_t s = 0; s < planner::kStreams; ++s) {
    const auto stream = static_cast<Stream>(s);
    bool used = std::any_of(program_.ops.begin(), program_.ops.end(), [&](const Op& op) { return op.stream == stream; });
    if (!used) continue;
    sg4::Actor::create(std::string(planner::stream_name(stream)), host, [this, stream] { run_stream(stream); });
  }
}

void Executor::run_stream(Stream stream) {
  for (const Op& op : program_.ops) {
    if (op.stream != stream) continue;
    {
      std::unique_lock lock(*mutex_);
      const double waiting_since = sg4::Engine::get_clock();
      const auto s = static_cast<size_t>(stream);
      stream_waits_for_[s] = op.id;
      stream_woken_[s]->wait(lock, [&] { return ready_to_run(op.id); });
      stream_waits_for_[s] = kNotWaiting;
      // The compute stream idles while a collective (or its copies) lags.
      if (stream == Stream::kCompute) {
        const double waited = sg4::Engine::get_clock() - waiting_since;
        exposed_ += waited;
        if (waited > 0 && last_dependency_is_receive(op)) pipeline_wait_ += waited;
      }
    }
    timings_[op.id].start = sg4::Engine::get_clock();
    execute(op);
    timings_[op.id].end = sg4::Engine::get_clock();
    finish(op);
  }
}

bool Executor::ready_to_run(uint32_t id) const {
  const Op& op = program_.ops[id];
  return issued_[id] != 0 && std::all_of(op.deps.begin(), op.deps.end(), [&](uint32_t d) { return done_[d] != 0; });
}

bool Executor::host_waits_done(const Op& op) const {
  return std::all_of(op.host.waits.begin(), op.host.waits.end(), [&](uint32_t d) { return done_[d] != 0; });
}

// Under the mutex, after an op was issued or ended: wakes the actors whose
// wait is over.
void Executor::wake_ready() {
  for (size_t s = 0; s < planner::kStreams; ++s) {
    const int64_t runs = stream_waits_for_[s];
    const int64_t flushes = stream_waits_done_[s];
    if ((runs != kNotWaiting && ready_to_run(static_cast<uint32_t>(runs))) ||
        (flushes != kNotWaiting && issued_done_ >= static_cast<size_t>(flushes))) {
      stream_woken_[s]->notify_all();
    }
  }
  if (host_waits_for_ != kNotWaiting && host_waits_done(program_.ops[static_cast<size_t>(host_waits_for_)])) {
    host_woken_->notify_all();
  }
}

bool Executor::last_dependency_is_receive(const Op& op) const {
  const auto last = std::max_element(op.deps.begin(), op.deps.end(),
                                     [this](uint32_t a, uint32_t b) { return timings_[a].end < timings_[b].end; });
  return last != op.deps.end() && program_.ops[*last].kind == OpKind::kRecv;
}

// The CPU thread: issues the ops in Program order, blocking first on the
// ops its host waits name (an event synchronize), then spending the op's
// host time. An op of k kernels is issued kernel by kernel: its first
// kernel leaves once everything but the last k - 1 launches is done (the
// op may start then), its last one at the end of its host time (the op
// cannot end before it has run; finish_after_issue).
void Executor::run_host() {
  for (const Op& op : program_.ops) {
    if (!op.host.waits.empty()) {
      std::unique_lock lock(*mutex_);
      host_waits_for_ = op.id;
      host_woken_->wait(lock, [&] { return host_waits_done(op); });
      host_waits_for_ = kNotWaiting;
    }
    const double seconds = host_seconds(op.host, host_costs_);
    const double later_launches =
        static_cast<double>(std::max<int64_t>(0, op.host.framework_ops - 1)) * host_costs_.framework_op_seconds;
    const double first = std::max(0.0, seconds - later_launches);
    if (first > 0) sg4::this_actor::sleep_for(first);
    {
      std::unique_lock lock(*mutex_);
      issued_[op.id] = 1;
      last_issue_[op.id] = sg4::Engine::get_clock() + (seconds - first);
      wake_ready();
    }
    if (seconds - first > 0) sg4::this_actor::sleep_for(seconds - first);
  }
}

// An op's last kernel runs after the CPU has issued it: the op ends no
// sooner than that issue plus the GPU time of one of its kernels (its time
// alone over its kernels).
void Executor::finish_after_issue(const Op& op, double seconds_alone) {
  if (op.host.framework_ops <= 1 || last_issue_.empty()) return;
  const double earliest = last_issue_[op.id] + seconds_alone / static_cast<double>(op.host.framework_ops);
  const double now = sg4::Engine::get_clock();
  if (earliest > now) sg4::this_actor::sleep_for(earliest - now);
}

void Executor::execute(const Op& op) {
  if (op.kind == OpKind::kAlloc || op.kind == OpKind::kFree) {
    on_memory(op);
    if (op.kind == OpKind::kAlloc && allocator_.last_cost().flushes > 0) flush_and_retry(op);
    return;
  }
  if (is_collective(op.kind)) {
    network_.run(op, &share_, rank_);
    return;
  }
  if (op.kind == OpKind::kSend || op.kind == OpKind::kRecv) {
    network_.transfer(op, rank_);
    return;
  }
  const OpCost cost = compute_.cost(op);
  if (cost.fixed > 0) sg4::this_actor::sleep_for(cost.fixed);
  for (double kernel : cost.persistent) share_.run_persistent(kernel);
  for (double kernel : cost.sm_kernels) share_.run_sm_bound(kernel);
  share_.run_memory_bound(cost.memory, cost.memory_kernels);
  finish_after_issue(op, cost.seconds());
}

void Executor::on_memory(const Op& op) {
  const planner::Buffer& buffer = program_.buffers[static_cast<size_t>(op.buffer)];
  if (planner::is_parameter_or_gradient_buffer(buffer.kind)) {
    state_and_buffers_ += op.kind == OpKind::kAlloc ? buffer.bytes : -buffer.bytes;
    peak_state_and_buffers_ = std::max(peak_state_and_buffers_, state_and_buffers_);
  }
  if (op.kind == OpKind::kAlloc) {
    std::vector<int64_t> pieces = buffer.pieces.empty() ? std::vector<int64_t>{buffer.bytes} : buffer.pieces;
    allocator_.allocate(op.buffer, pieces, static_cast<int>(op.stream));
    // The all-gather stream moved on: the events of record_stream'ed frees complete.
    if (op.stream == Stream::kAllGather) allocator_.complete_pending();
  } else if (free_policy_.defer_gathered_frees && is_gathered(buffer.kind) && op.stream != Stream::kAllGather) {
    allocator_.release_pending(op.buffer);
  } else {
    allocator_.release(op.buffer);
  }
  memory_.push_back({sg4::Engine::get_clock(), allocator_.allocated(), allocator_.reserved(), state_and_buffers_});
}

// The caching allocator released its cache to retry a request
// (docs/SIMULATOR.md section 8, allocator pressure): cudaFree waits for every
// kernel on the device, so the allocation ends when every op issued before
// it has ended; then the driver frees the released segments and allocates
// the new one.
void Executor::flush_and_retry(const Op& op) {
  const double since = sg4::Engine::get_clock();
  {
    std::unique_lock lock(*mutex_);
    const auto s = static_cast<size_t>(op.stream);
    stream_waits_done_[s] = op.id;
    stream_woken_[s]->wait(lock, [&] { return issued_done_ >= op.id; });
    stream_waits_done_[s] = kNotWaiting;
  }
  const AllocationCost& cost = allocator_.last_cost();
  const double driver = free_policy_.driver_calls.seconds(cost);
  if (driver > 0) sg4::this_actor::sleep_for(driver);
  ++flushes_;
  flush_seconds_ += sg4::Engine::get_clock() - since;
}

void Executor::finish(const Op& op) {
  std::unique_lock lock(*mutex_);
  done_[op.id] = 1;
  while (issued_done_ < done_.size() && done_[issued_done_] != 0) ++issued_done_;
  ++finished_;
  if (progress_ && finished_ % 256 == 0) progress_(static_cast<double>(finished_) / static_cast<double>(done_.size()));
  wake_ready();
}

double Executor::step_seconds() const {
  double end = 0;
  for (const OpTiming& t : timings_) end = std::max(end, t.end);
  return end;
}

}  // namespace ragged::sim
