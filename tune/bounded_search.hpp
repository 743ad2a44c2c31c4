#pragma once
// Branch and bound over one search's candidates, exact in its top k. Every
// candidate is planned first (pruned, invalid, or awaiting simulation with
// its step-time bound: evaluate() with simulate = false); those awaiting are
// then simulated best bound first, and one whose bound's tokens/s per GPU
// is below the k-th best rate simulated so far is never handed out: no
// simulation of it could enter the top k. So that the answer does not depend
// on the workers' timing, every candidate whose bound lies below the final
// k-th best is then reported kBounded, also one simulated meanwhile (or read
// from the cache), and every other one is simulated.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "common/task_pool.hpp"
#include "tune/evaluation.hpp"

namespace ragged::tune {

struct BoundedSearch {
  size_t candidates = 0;
  size_t top = 1;  // k: the ranking's first k are exact
  int64_t budget_bytes = 0;
  // A worker's task for candidate i: planned only, or simulated. Its result
  // is the evaluation's JSON with "index": i.
  std::function<std::string(size_t i, bool simulate)> task;
  // The rate candidate i is ranked by, from its evaluation that fits.
  std::function<double(size_t i, const Evaluation& e)> rate;
  bool effective_rate = false;  // the rate is the goodput-adjusted one (for the bounded ones' message)
  std::function<void(size_t done, size_t total)> progress;
};

struct BoundedEvaluations {
  std::vector<Evaluation> evaluations;  // one per candidate
  // The k-th best rate the bounds were held against; nullopt when fewer
  // than k fit (then nothing is bounded).
  std::optional<double> kth_best;
};

BoundedEvaluations evaluate_bounded(TaskRunner& runner, const BoundedSearch& search);

// "1st", "2nd", "3rd", "11th": the k-th best as the messages name it.
std::string ordinal(size_t k);

}  // namespace ragged::tune
