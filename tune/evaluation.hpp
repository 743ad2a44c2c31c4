#pragma once
// What the tuner learns about one candidate: discarded before simulation
// (its memory floor exceeds what it may use), rejected by the scenario's
// own checks, failed in the simulator, simulated with its figures, or left
// unsimulated because its step-time bound keeps it out of the top k. As
// JSON it travels between MPI ranks and lives in the result cache.

#include <cstdint>
#include <limits>
#include <string>

#include <nlohmann/json.hpp>

namespace ragged::tune {

enum class Outcome {
  kSimulated,
  kPruned,   // the planner's floor alone exceeds the memory budget: no simulation
  kInvalid,  // the scenario rejects the combination (a granularity the model does not allow)
  kFailed,   // the simulator refused it or failed
  // Not simulated: even its step-time bound (sim::step_time_lower_bound)
  // would rank it below the k-th best simulated candidate (Tuner's branch and bound).
  kBounded,
};

enum class PruneReason {
  kNone,
  kPersistentState,  // shards and optimizer states alone exceed the budget
  kActivations,      // with the activations and workspaces one stream holds at once, they do
};

struct Evaluation {
  Outcome outcome = Outcome::kInvalid;
  PruneReason prune_reason = PruneReason::kNone;
  std::string message;  // why invalid or failed

  // From the planner (every candidate that resolves):
  int64_t persistent_bytes = 0;   // sharded state per rank
  int64_t floor_bytes = 0;        // planner::memory_floor: no execution peaks lower
  int64_t static_peak_bytes = 0;  // planner::memory_breakdown's estimate, for the report
  int64_t capacity_bytes = 0;
  int64_t checkpoint_bytes_per_gpu = 0;  // planner::checkpoint_bytes_per_gpu: what the goodput saves and loads

  // From the Programs and the simulator's cost models (a candidate that is
  // not pruned): no simulation of it steps faster (sim::step_time_lower_bound;
  // 0: no bound), and a GPU's tokens in a step.
  double step_time_bound_s = 0;
  int64_t tokens_per_step = 0;

  // From the simulator:
  double step_time_s = 0;
  double tokens_per_s_per_gpu = 0;
  double mfu = 0;
  double exposed_comm_s = 0;
  double compute_s = 0;
  double comm_s = 0;
  int64_t peak_reserved_bytes = 0;
  int64_t peak_allocated_bytes = 0;
  bool oom = false;
  int64_t alloc_retries = 0;
  std::string mode;  // full, symmetric
  double simulation_wall_s = 0;
  // Its band, computed once from the simulated scenario and summary
  // (sim::regime_band, from the validation residuals of its regime): where
  // the published tokens/s per GPU of runs like it lay against their
  // predictions (band_rows comparable rows; 0: no band), and its memory band.
  double band_tokens_low = 0;
  double band_tokens_high = 0;
  int64_t band_rows = 0;
  int64_t band_memory_low_bytes = 0;
  // The upper end of its memory band: the peak reserved memory runs like it
  // reached against their predictions (the prediction itself where the
  // regime has no rows). Whether `fits` requires it under the capacity is the
  // search's choice (Constraints::memory_band), set on every evaluation it
  // returns.
  int64_t band_peak_bytes = 0;
  bool band_rule = false;
  // Its own allocator capacity less the search's headroom (0: not set). A
  // mesh's communicators leave a candidate less than the base scenario's
  // capacity, so the search's one budget alone could pass a tight fit.
  int64_t own_budget_bytes = 0;

  bool cached = false;  // read from the result cache (this run's, not the answer)

  // The most tokens/s per GPU a simulation of it can predict: infinity
  // without a bound.
  double tokens_per_s_per_gpu_bound() const {
    return step_time_bound_s > 0 ? static_cast<double>(tokens_per_step) / step_time_bound_s
                                 : std::numeric_limits<double>::infinity();
  }

  // Simulated without running out of memory and with a peak within `budget_bytes`,
  // reached without the allocator releasing its cache: a release means the step
  // reached the allocator's capacity, and the reserved peak it leaves behind
  // understates what the step asked for, so the headroom was not kept. Within
  // its own budget too; under the band rule, its memory band's upper end
  // within the capacity.
  bool fits(int64_t budget_bytes) const {
    return outcome == Outcome::kSimulated && !oom && alloc_retries == 0 && peak_reserved_bytes <= budget_bytes &&
           (own_budget_bytes == 0 || peak_reserved_bytes <= own_budget_bytes) && !(band_rule && band_over_capacity());
  }
  bool band_over_capacity() const { return band_peak_bytes > capacity_bytes; }
};

nlohmann::json to_json(const Evaluation& evaluation);
Evaluation evaluation_from_json(const nlohmann::json& json);

std::string outcome_name(Outcome outcome);          // "simulated", "pruned", "invalid", "failed", "bounded"
std::string prune_reason_text(PruneReason reason);  // "persistent state over budget", ...

// The bytes a candidate may use: capacity less the headroom.
int64_t memory_budget(int64_t capacity_bytes, double headroom);

}  // namespace ragged::tune
