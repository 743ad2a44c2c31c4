#pragma once
// Executes one rank's Program in simulated time: one SimGrid actor per
// stream runs that stream's ops in order, each op waiting for its
// dependencies on other streams (an event wait) and for the CPU thread to
// have issued it. A host actor is that CPU thread: it issues the ops in
// Program order, spending each op's host time (host_model.hpp) and blocking
// where the op's host waits say. Compute and memory-bound ops take the
// compute model's time, their SM-bound and HBM-bound parts shared with the
// collectives running on the same GPU (gpu_share.hpp); collectives run as
// flows through the network (CollectiveEngine); alloc and free drive the
// memory model. Every rank of a data-parallel group runs the same Program,
// so the representative rank's timeline is the step's; on a cluster that is
// not uniform one executor runs per simulated rank, meeting the others at
// every collective (CollectiveEngine::run).

#include <array>
#include <cstdint>
#include <functional>
#include <vector>

#include "planner/program.hpp"
#include "sim/collective_engine.hpp"
#include "sim/compute_model.hpp"
#include "sim/gpu_share.hpp"
#include "sim/host_model.hpp"
#include "sim/memory_model.hpp"

namespace ragged::sim {

struct OpTiming {
  double start = -1;
  double end = -1;
};

// How a strategy's allocator frees gathered parameters, and what the
// allocator's driver calls cost.
struct FreePolicy {
  // record_stream semantics (FSDP1, FSDP2): a gathered buffer freed on the
  // compute stream returns to the allocator only when the all-gather stream
  // reaches its next allocation (the next unit's gather).
  bool defer_gathered_frees = false;
  // The cudaFree and cudaMalloc calls (unmaps and maps of pages) while the
  // allocator releases its cache and retries (docs/SIMULATOR.md section 8).
  DriverCallCosts driver_calls;
};

// The GPU's and the CPU's mechanisms the executor applies (zeros: none).
struct Mechanisms {
  GpuResources gpu;  // SMs and HBM shared between a GPU's streams and its collectives
  HostCosts host;    // the CPU thread that issues the ops
};

class Executor {
 public:
  // `rank`: which of the network's simulated ranks this executor is.
  Executor(const planner::Program& program, const ComputeModel& compute, CollectiveEngine& network,
           CachingAllocator& allocator, FreePolicy free_policy, Mechanisms mechanisms = {}, int rank = 0);

  // Creates the stream actors on `host`; run the engine afterwards.
  void spawn(simgrid::s4u::Host* host);

  // Called every few hundred ops with the fraction of ops done.
  void on_progress(std::function<void(double)> callback) { progress_ = std::move(callback); }

  const std::vector<OpTiming>& timings() const { return timings_; }
  const std::vector<MemorySample>& memory() const { return memory_; }
  // Time the compute stream sat idle waiting for another stream's op.
  double exposed_seconds() const { return exposed_; }
  // Of it, the waits whose last dependency was a receive from another
  // pipeline stage (the bubble and the transfers).
  double pipeline_wait_seconds() const { return pipeline_wait_; }
  // Peak of the persistent state plus the live parameter and gradient
  // buffers, each freed at its free op.
  int64_t peak_state_and_buffers() const { return peak_state_and_buffers_; }
  double step_seconds() const;
  // Releases of the allocator's cache with a retry, and the time the compute
  // stream spent in them (the device synchronization and the driver calls).
  int64_t flushes() const { return flushes_; }
  double flush_seconds() const { return flush_seconds_; }

 private:
  void run_stream(planner::Stream stream);
  bool last_dependency_is_receive(const planner::Op& op) const;
  void run_host();
  void finish_after_issue(const planner::Op& op, double seconds_alone);
  void execute(const planner::Op& op);
  void on_memory(const planner::Op& op);
  void flush_and_retry(const planner::Op& op);
  void finish(const planner::Op& op);

  const planner::Program& program_;
  const ComputeModel& compute_;
  CollectiveEngine& network_;
  CachingAllocator& allocator_;
  FreePolicy free_policy_;
  int rank_;
  HostCosts host_costs_;
  GpuShare share_;
  std::vector<OpTiming> timings_;
  std::vector<char> done_;
  size_t issued_done_ = 0;  // ops [0, issued_done_) have all ended
  int64_t flushes_ = 0;
  double flush_seconds_ = 0;
  std::vector<char> issued_;        // the CPU thread has issued the op's first kernel
  std::vector<double> last_issue_;  // when it issues the op's last kernel
  std::vector<int> deferred_frees_;  // buffers waiting for the all-gather stream to move on
  std::vector<MemorySample> memory_;
  double exposed_ = 0;
  double pipeline_wait_ = 0;
  int64_t state_and_buffers_ = 0;
  int64_t peak_state_and_buffers_ = 0;
  size_t finished_ = 0;
  std::function<void(double)> progress_;
  // Each waiting actor sleeps on its own condition variable, woken only when
  // what it waits for has come true: every wake is a context switch in
  // SimGrid, and an op's end unblocks at most a few of the ten actors.
  bool ready_to_run(uint32_t op) const;
  bool host_waits_done(const planner::Op& op) const;
  void wake_ready();
  static constexpr int64_t kNotWaiting = -1;
  simgrid::s4u::MutexPtr mutex_;
  std::array<simgrid::s4u::ConditionVariablePtr, planner::kStreams> stream_woken_;
  std::array<int64_t, planner::kStreams> stream_waits_for_{};  // the op a stream waits to run, or kNotWaiting
  std::array<int64_t, planner::kStreams> stream_waits_done_{};  // the op whose predecessors a stream's flush waits on
  simgrid::s4u::ConditionVariablePtr host_woken_;
  int64_t host_waits_for_ = kNotWaiting;  // the op whose host waits the CPU thread blocks on
};

}  // namespace ragged::sim
