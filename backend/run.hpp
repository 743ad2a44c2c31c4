#pragma once
// `ragged run`: executes the scenario's Program for real on this process's
// rank (host: CBLAS + the communicator; one rank needs no MPI; GPU:
// backend/cuda/cuda_run.hpp), measures every op, and optionally checks the
// trained parameters against the unsharded single-process reference and
// every collective against exact expectations.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "backend/communicator.hpp"
#include "planner/resolved_scenario.hpp"
#include "traces/trace.pb.h"

namespace ragged::backend {

// A NaN placed into one parameter after an optimizer step, to show that the
// checks catch it (ragged run --inject-nan TENSOR@STEP).
struct NanInjection {
  std::string tensor;  // a tensor name of the model
  int64_t step = 1;    // after this step's update (counting warm-up steps)
};

struct RunOptions {
  std::string device = "cpu";
  int64_t steps = 3;          // measured steps
  int64_t warmup_steps = 1;
  uint64_t seed = 1234;
  bool verify_collectives = false;
  bool check_reference = false;
  // Reduce-scatters and all-reduces sum the ranks' slots in rank order, as
  // the reference does, so a sharded host run matches it bitwise (cpu only).
  // Off, the collectives are the ones a normal run uses (MPI's own order).
  bool ordered_reductions = false;
  // How the trained parameters must match the reference: negative, bitwise
  // (what the host claims with ordered reductions: the same kernels, the same
  // sums); otherwise the relative L2 error allowed per tensor (MPI's or
  // NCCL's sum order, cuBLAS's GEMMs).
  double tolerance = -1;
  std::optional<NanInjection> inject_nan;
  // Longest wait in one collective before the job is aborted, naming the
  // ranks that did not arrive (backend/watchdog.hpp); 0 turns it off.
  double collective_timeout_s = 300;
};

struct RunResult {
  traces::Trace trace;                // this rank's measured trace and the summary over the measured steps
  std::vector<double> losses;         // per step run, mean over ranks
  int64_t collective_errors = -1;     // -1: not verified
  // NaN or infinity in a loss, parameter, gradient or optimizer state: the
  // first one (step, rank, what, tensor, element); the run stops at its step.
  std::string non_finite;
  double reference_error = -1;        // -1: not checked
  bool reference_bitwise = true;      // the claim checked: bitwise, or within reference_tolerance
  double reference_tolerance = 0;
  int64_t reference_differing = 0;    // bitwise different (or non-finite) elements
  int64_t reference_non_finite = 0;   // NaN or infinity in the trained parameters or the reference
  std::string reference_first_non_finite;
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

  // Every check that failed, in words; empty when the run passed.
  std::vector<std::string> failures() const;
};

RunResult run(const planner::ResolvedScenario& resolved, const RunOptions& options, Communicator& comm);

}  // namespace ragged::backend
