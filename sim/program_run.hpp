#pragma once
// Runs one Program on a simulated cluster: the SimGrid engine, the platform,
// the stream actors and the allocator, once per process; on a cluster that is
// not uniform, one executor (and allocator) per simulated rank. simulate() builds on
// it; tests drive it directly with hand-made Programs.

#include <cstdint>
#include <functional>
#include <vector>

#include "planner/program.hpp"
#include "sim/cluster_spec.hpp"
#include "sim/collective_engine.hpp"
#include "sim/compute_model.hpp"
#include "sim/executor.hpp"
#include "sim/memory_model.hpp"

namespace ragged::sim {

struct ProgramRunOptions {
  ClusterSpec cluster;
  SimulationMode mode = SimulationMode::kFull;
  FreePolicy free_policy;
  int64_t capacity = 0;  // device memory the allocator may reserve
  bool expandable_segments = false;  // PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True
  std::function<void(double)> progress;
  // SM and HBM sharing between a GPU's streams and its collectives
  // (section 6b), from the compute model's GPU; the CPU issue path (host
  // costs; none by default: hand-built Programs carry no host work).
  bool share_gpu = true;
  HostCosts host;
  // The ranks whose Programs run (the first one's timeline is reported) and
  // the cluster's health; the default: rank 0 on a uniform cluster.
  std::vector<SimulatedRank> ranks = {SimulatedRank{}};
  ClusterHealth health;
};

struct ProgramRun {
  size_t reported = 0;  // the simulated rank whose timeline and memory follow
  std::vector<OpTiming> timings;  // of the reported rank
  std::vector<MemorySample> memory;
  double step_seconds = 0;  // the last simulated rank's end
  double exposed_seconds = 0;
  double pipeline_wait_seconds = 0;  // of the reported rank's exposed time, waiting for another stage
  int64_t peak_allocated = 0;
  int64_t peak_reserved = 0;
  int64_t peak_state_and_buffers = 0;  // persistent state + parameter and gradient buffers
  bool out_of_memory = false;
  int64_t allocator_flushes = 0;        // releases of the cache and retries
  double allocator_flush_seconds = 0;   // compute-stream time spent in them
  int64_t flows = 0;
  int64_t simulated_nodes = 0;
  std::vector<RankRun> ranks;                 // every simulated rank, in order
  // Where the simulated ranks ran different Programs (a pipeline's stages):
  // every rank's timings and memory samples, in order.
  std::vector<std::vector<OpTiming>> rank_timings;
  std::vector<std::vector<MemorySample>> rank_memory;
  std::vector<CollectiveRecord> collectives;  // in the order they ended
};

// The first simulated rank is reported.
ProgramRun run_program(const planner::Program& program, const ComputeModel& compute, const ProgramRunOptions& options);

// Simulated rank r runs programs[r] (a pipeline stage's Program each); the
// rank with the highest peak of reserved memory is reported (the stage that
// decides whether the run fits). Their meshes are the same.
ProgramRun run_programs(const std::vector<const planner::Program*>& programs, const ComputeModel& compute,
                        const ProgramRunOptions& options);

}  // namespace ragged::sim
