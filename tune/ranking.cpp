#include "tune/ranking.hpp"

#include <algorithm>

#include "common/errors.hpp"

namespace ragged::tune {

Ranking rank(const std::vector<Evaluation>& evaluations, int64_t budget_bytes) {
  std::vector<double> rates;
  rates.reserve(evaluations.size());
  for (const Evaluation& e : evaluations) rates.push_back(e.tokens_per_s_per_gpu);
  return rank(evaluations, budget_bytes, rates);
}

Ranking rank(const std::vector<Evaluation>& evaluations, int64_t budget_bytes, const std::vector<double>& rates) {
  RAGGED_ASSERT(rates.size() == evaluations.size(), "one rate per evaluation");
  Ranking out;
  for (size_t i = 0; i < evaluations.size(); ++i) {
    if (evaluations[i].fits(budget_bytes)) out.ranked.push_back(i);
  }
  auto faster = [&](size_t a, size_t b) {
    const Evaluation &x = evaluations[a], &y = evaluations[b];
    if (rates[a] != rates[b]) return rates[a] > rates[b];
    if (x.peak_reserved_bytes != y.peak_reserved_bytes) return x.peak_reserved_bytes < y.peak_reserved_bytes;
    return a < b;
  };
  std::sort(out.ranked.begin(), out.ranked.end(), faster);

  std::vector<size_t> by_memory = out.ranked;
  std::sort(by_memory.begin(), by_memory.end(), [&](size_t a, size_t b) {
    const Evaluation &x = evaluations[a], &y = evaluations[b];
    if (x.peak_reserved_bytes != y.peak_reserved_bytes) return x.peak_reserved_bytes < y.peak_reserved_bytes;
    return faster(a, b);
  });
  for (size_t i : by_memory) {
    if (out.pareto.empty() || rates[i] > rates[out.pareto.back()]) {
      out.pareto.push_back(i);
    }
  }
  return out;
}

TrainingTime training_time(double tokens, double tokens_per_s_per_gpu, int64_t gpus,
                           std::optional<double> price_per_gpu_hour) {
  TrainingTime out;
  out.seconds = tokens / (tokens_per_s_per_gpu * static_cast<double>(gpus));
  out.gpu_hours = out.seconds * static_cast<double>(gpus) / 3600.0;
  if (price_per_gpu_hour) out.cost = out.gpu_hours * *price_per_gpu_hour;
  return out;
}

}  // namespace ragged::tune
