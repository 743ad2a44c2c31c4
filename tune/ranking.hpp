#pragma once
// Orders what a search found: the candidates that fit, fastest first (by
// predicted tokens/s per GPU, or by another rate per candidate such as the
// goodput-adjusted one; ties to the smaller peak, then to the earlier
// candidate, so the order never depends on who simulated what), the
// throughput-memory Pareto front among them, and what training on the
// winner takes.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "tune/evaluation.hpp"

namespace ragged::tune {

struct Ranking {
  std::vector<size_t> ranked;  // indices of the fitting evaluations, best first
  // The fitting candidates no other beats on both the rate and peak
  // memory, by peak memory ascending (each faster than all before it).
  std::vector<size_t> pareto;
};

// By each evaluation's tokens_per_s_per_gpu.
Ranking rank(const std::vector<Evaluation>& evaluations, int64_t budget_bytes);
// By `rates[i]` for evaluation i (one per evaluation; read for those that fit).
Ranking rank(const std::vector<Evaluation>& evaluations, int64_t budget_bytes, const std::vector<double>& rates);

struct TrainingTime {
  double seconds = 0;
  double gpu_hours = 0;
  std::optional<double> cost;  // gpu_hours x the price, when one is given
};

// `tokens` trained at `tokens_per_s_per_gpu` on `gpus` GPUs.
TrainingTime training_time(double tokens, double tokens_per_s_per_gpu, int64_t gpus,
                           std::optional<double> price_per_gpu_hour);

}  // namespace ragged::tune
