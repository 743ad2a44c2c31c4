#include "tune/bounded_search.hpp"

#include <algorithm>
#include <functional>
#include <queue>
#include <utility>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "common/errors.hpp"
#include "tune/evaluate.hpp"

namespace ragged::tune {
namespace {

// The k best rates seen so far.
class BestRates {
 public:
  explicit BestRates(size_t k) : k_(k) {}
  void add(double rate) {
    best_.push(rate);
    if (best_.size() > k_) best_.pop();
  }
  std::optional<double> kth() const { return best_.size() == k_ ? std::optional<double>(best_.top()) : std::nullopt; }

 private:
  size_t k_;
  std::priority_queue<double, std::vector<double>, std::greater<>> best_;
};

// A planned candidate's planner figures and bound, reported as not simulated.
Evaluation bounded(const Evaluation& planned, const BoundedSearch& search, double kth_best) {
  Evaluation e;
  e.outcome = Outcome::kBounded;
  e.persistent_bytes = planned.persistent_bytes;
  e.floor_bytes = planned.floor_bytes;
  e.static_peak_bytes = planned.static_peak_bytes;
  e.capacity_bytes = planned.capacity_bytes;
  e.checkpoint_bytes_per_gpu = planned.checkpoint_bytes_per_gpu;
  e.step_time_bound_s = planned.step_time_bound_s;
  e.tokens_per_step = planned.tokens_per_step;
  e.cached = planned.cached;
  e.message = fmt::format("cannot enter the top {}: its bound {:.1f} tokens/s per GPU is below the {} best {:.1f}{}",
                          search.top, planned.tokens_per_s_per_gpu_bound(), ordinal(search.top), kth_best,
                          search.effective_rate ? " effective tokens/s per GPU" : "");
  return e;
}

std::pair<size_t, Evaluation> parse(const std::string& result) {
  const nlohmann::json j = nlohmann::json::parse(result);
  return {j.at("index").get<size_t>(), evaluation_from_json(j)};
}

}  // namespace

std::string ordinal(size_t k) {
  const size_t tens = k % 100, units = k % 10;
  const char* suffix = tens >= 11 && tens <= 13 ? "th"
                       : units == 1             ? "st"
                       : units == 2             ? "nd"
                       : units == 3             ? "rd"
                                                : "th";
  return fmt::format("{}{}", k, suffix);
}

BoundedEvaluations evaluate_bounded(TaskRunner& runner, const BoundedSearch& search) {
  RAGGED_ASSERT(search.top >= 1, "a bounded search keeps at least its best candidate exact");
  const size_t n = search.candidates;
  std::vector<std::string> plan_tasks;
  for (size_t i = 0; i < n; ++i) plan_tasks.push_back(search.task(i, false));
  std::vector<Evaluation> planned(n);
  for (const auto& result : runner.map(plan_tasks)) {
    auto [i, e] = parse(*result);
    planned[i] = std::move(e);
  }

  BoundedEvaluations out;
  out.evaluations = planned;
  BestRates best(search.top);
  std::vector<size_t> awaiting;
  for (size_t i = 0; i < n; ++i) {
    if (awaits_simulation(planned[i])) {
      awaiting.push_back(i);
    } else if (planned[i].fits(search.budget_bytes)) {
      best.add(search.rate(i, planned[i]));  // read from the cache
    }
  }
  // The likeliest to be fast first: the k-th best rises early, and the
  // bound skips more of the rest.
  std::stable_sort(awaiting.begin(), awaiting.end(), [&](size_t a, size_t b) {
    return planned[a].tokens_per_s_per_gpu_bound() > planned[b].tokens_per_s_per_gpu_bound();
  });
  std::vector<std::string> simulate_tasks;
  for (size_t i : awaiting) simulate_tasks.push_back(search.task(i, true));
  MapOptions options;
  options.stop = [&](const std::string& result) {
    const auto [i, e] = parse(result);
    if (e.fits(search.budget_bytes)) best.add(search.rate(i, e));
    return false;
  };
  options.skip = [&](size_t j) {
    const std::optional<double> kth = best.kth();
    return kth && planned[awaiting[j]].tokens_per_s_per_gpu_bound() < *kth;
  };
  const size_t settled = n - awaiting.size();
  if (search.progress) options.progress = [&](size_t done, size_t) { search.progress(settled + done, n); };
  const auto results = runner.map(simulate_tasks, options);
  for (size_t j = 0; j < awaiting.size(); ++j) {
    if (results[j]) out.evaluations[awaiting[j]] = parse(*results[j]).second;
  }

  // The same answer whoever simulated what: bounded below the final k-th best.
  BestRates final_best(search.top);
  for (size_t i = 0; i < n; ++i) {
    const Evaluation& e = out.evaluations[i];
    if (!awaits_simulation(e) && e.fits(search.budget_bytes)) final_best.add(search.rate(i, e));
  }
  out.kth_best = final_best.kth();
  for (size_t i = 0; i < n; ++i) {
    Evaluation& e = out.evaluations[i];
    const bool boundable = e.outcome == Outcome::kSimulated || e.outcome == Outcome::kFailed;
    if (out.kth_best && boundable && e.tokens_per_s_per_gpu_bound() < *out.kth_best) {
      e = bounded(planned[i], search, *out.kth_best);
    }
    RAGGED_ASSERT(!awaits_simulation(e), "a candidate left unsimulated has its bound below the k-th best");
  }
  return out;
}

}  // namespace ragged::tune
