#pragma once
// The search on one GPU count: every candidate of the space (search_space)
// evaluated (evaluate: pruned, or simulated in a child process) by a
// TaskRunner's workers (threads, or MPI ranks and their threads), then
// ranked: by tokens/s per GPU, or by the goodput-adjusted (effective) rate
// under interruptions, computed after the search from its figures
// (candidate_goodput). A task is a self-contained JSON string (GPU count and
// candidate), so any worker on any rank runs it from the same base
// scenario and constraints, and the answer is the same whoever ran what.

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "common/task_pool.hpp"
#include "planner/goodput.hpp"
#include "scenarios/scenario_loader.hpp"
#include "tune/evaluation.hpp"
#include "tune/ranking.hpp"
#include "tune/result_cache.hpp"
#include "tune/search_space.hpp"

namespace ragged::tune {

// What the ranking orders by.
enum class RankBy {
  kThroughput,  // predicted tokens/s per GPU on a healthy cluster
  kGoodput,     // that times the goodput under the scenario's goodput block
};

struct TuneOptions {
  Constraints constraints;
  std::optional<std::filesystem::path> cache_dir;  // nullopt: no cache
  RankBy rank_by = RankBy::kThroughput;
  // k: the ranking's first k exact, by branch and bound (bounded_search.hpp):
  // a candidate whose step-time bound keeps it out of them is not simulated.
  // nullopt: every candidate that fits the memory floor is simulated.
  std::optional<size_t> exact_top;
};

struct OutcomeCounts {
  size_t simulated = 0;
  size_t pruned_state = 0;        // PruneReason::kPersistentState
  size_t pruned_activations = 0;  // PruneReason::kActivations
  size_t invalid = 0;
  size_t failed = 0;
  size_t bounded = 0;  // Outcome::kBounded: not simulated
  size_t cached = 0;   // of all of them, read from the cache
  size_t fitting = 0;

  size_t pruned() const { return pruned_state + pruned_activations; }
};

struct SearchResult {
  int64_t gpus = 0;
  BatchShape batch;
  int64_t budget_bytes = 0;
  std::vector<Candidate> candidates;
  std::vector<Evaluation> evaluations;  // one per candidate
  // Ranking by goodput: one per candidate, set for those that fit; else empty.
  std::vector<std::optional<planner::GoodputEstimate>> goodput;
  // Of the simulated candidates (with bounded ones, exact in its first
  // `exact_top`; the Pareto front and the count that fit are the simulated ones').
  Ranking ranking;
  OutcomeCounts counts;
  std::optional<size_t> exact_top;  // TuneOptions::exact_top
  // The k-th best rate the bounds were held against (nullopt: exhaustive,
  // or fewer than k fit and nothing was bounded).
  std::optional<double> kth_best_rate;
  double wall_seconds = 0;
  // FSDP alone fitted nothing, so tensor parallelism's default sizes were
  // searched too (Constraints::tps left to its default).
  bool widened_to_tensor_parallelism = false;

  bool any_fits() const { return !ranking.ranked.empty(); }
  size_t best() const { return ranking.ranked.front(); }  // only when any_fits()
  bool by_goodput() const { return !goodput.empty(); }
  // The rate candidate i is ranked by: its effective tokens/s per GPU when
  // ranking by goodput, else its tokens/s per GPU.
  double ranked_rate(size_t i) const;
};

using SearchProgress = std::function<void(size_t done, size_t total)>;

class Tuner {
 public:
  // Checks the constraints (InputError) and opens the cache.
  Tuner(scenarios::LoadedScenario base, TuneOptions options);

  // A worker's work: evaluates the task a search handed out.
  std::string run_task(const std::string& task) const;

  // Every candidate on `gpus` GPUs. InputError when the constraints allow
  // none there (the batch does not divide, no shard group divides).
  SearchResult search(TaskRunner& runner, int64_t gpus, const SearchProgress& progress = {}) const;
  // The search under `constraints` alone (search widens to meshes itself).
  SearchResult search_with(TaskRunner& runner, int64_t gpus, const Constraints& constraints,
                           const SearchProgress& progress = {}) const;
  // Whether any candidate fits on `gpus`: the likeliest to fit first
  // (full checkpointing, small micro-batches, large shard groups), stopping
  // at the first that does. False when none can be formed there.
  bool fits_at(TaskRunner& runner, int64_t gpus, const SearchProgress& progress = {}) const;

  // The base scenario on `gpus` GPUs, and a candidate's scenario there.
  scenarios::LoadedScenario base_at(int64_t gpus) const;
  scenarios::LoadedScenario scenario_of(int64_t gpus, const Candidate& candidate) const;

  const scenarios::LoadedScenario& base() const { return base_; }
  const TuneOptions& options() const { return options_; }
  int64_t sequence_length() const;

 private:
  // Candidate `index` of the search; `simulate` false: planned and bounded only.
  std::string task_of(int64_t gpus, const Candidate& candidate, size_t index = 0, bool simulate = true) const;
  // The reserved-memory budget of a search: the allocator's capacity less the headroom.
  int64_t budget_of(const scenarios::Scenario& base) const;
  std::vector<Evaluation> evaluate_all(TaskRunner& runner, int64_t gpus, const std::vector<Candidate>& candidates,
                                       const MapOptions& map_options) const;
  // The evaluations of `out`'s candidates by branch and bound.
  void evaluate_bounded(TaskRunner& runner, SearchResult& out, const SearchProgress& progress) const;

  scenarios::LoadedScenario base_;
  TuneOptions options_;
  std::optional<ResultCache> cache_;
};

}  // namespace ragged::tune
