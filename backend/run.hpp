#pragma once
// `ragged run`: executes the scenario's Program for real on this process's
// rank (host: CBLAS + the communicator; one rank needs no MPI; GPU:
// backend/cuda/cuda_run.hpp), measures every op, and optionally checks the
// trained parameters against the unsharded single-process reference and
// every collective against exact expectations.

#include <cstdint>
#include <string>

#include "backend/communicator.hpp"
#include "planner/resolved_scenario.hpp"
#include "traces/trace.pb.h"

namespace ragged::backend {

struct RunOptions {
  std::string device = "cpu";
  int64_t steps = 3;          // measured steps
  int64_t warmup_steps = 1;
  uint64_t seed = 1234;
  bool verify_collectives = false;
  bool check_reference = false;   // implies ordered reductions: a bitwise-comparable sum order
  double tolerance = 1e-6;    // relative L2 error per tensor allowed against the reference
};

struct RunResult {
  traces::Trace trace;                // this rank's measured trace (last step's events)
  std::vector<double> losses;         // per step, mean over ranks
  int64_t collective_errors = -1;     // -1: not verified
  double reference_error = -1;        // -1: not checked
  int64_t reference_differing = 0;    // bitwise different elements
  int replicas = 1;                   // HSDP: replicas of each shard group
  int64_t replica_differing = 0;      // HSDP: shard elements differing bitwise from replica 0's
  int64_t reference_elements = 0;
  std::string worst_tensor;
  bool reference_ok = true;
  // Memory: what the executor holds for the step (persistent state and the
  // arena carved by the plan) against the Program's issue-order peak
  // (planner/memory_breakdown.hpp), and on a GPU everything the process
  // holds there (cudaMemGetInfo: the workload's private buffers, cuBLAS and
  // NCCL included).
  int64_t arena_held_bytes = 0;
  int64_t program_peak_bytes = 0;
  int64_t device_used_bytes = -1;  // -1: not a GPU run
};

RunResult run(const planner::ResolvedScenario& resolved, const RunOptions& options, Communicator& comm);

}  // namespace ragged::backend
