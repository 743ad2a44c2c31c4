// Our structure-aware planner. The paper binary-searches S over multiples of
// running LCMs, which assumes feasibility is monotone in S (it is not) and
// starts from the balanced bound. We start from the proven lower bound
// (lower_bound.hpp), move up by the deficit the exact greedy reports, try
// more orders (including gap filling: small tensors placed in the alignment
// gaps large tensors leave), scan below the best S found for non-monotone
// wins, and keep the paper's answer as a floor.

#include <algorithm>
#include <numeric>

#include "planner/contiguous_search.hpp"
#include "planner/lower_bound.hpp"
#include "planner/placement.hpp"

namespace ragged::planner {
namespace {

constexpr int kMaxJumps = 64;
constexpr int64_t kRefineSteps = 32;
constexpr int64_t kStructuredTries = 4;

enum class Placer { kInOrder, kFillGaps, kBestFit, kRigidFirst };

struct Variant {
  std::vector<int> order;  // unused by kBestFit
  Placer placer = Placer::kInOrder;
};

class Search {
 public:
  explicit Search(const UnitProblem& problem) : p_(problem) {
    for (const PlanTensor& t : p_.tensors) max_granule_ = std::max(max_granule_, t.granule);
    if (max_granule_ > 1) {
      variants_.push_back({{}, Placer::kBestFit});
      variants_.push_back({{}, Placer::kRigidFirst});
    }
    std::vector<std::vector<int>> orders = paper_orders(p_);
    // Model order with the element-wise tensors (norms, biases) moved last, as
    // Megatron-FSDP packs its fragments.
    std::vector<int> vectors_last = orders.front();
    std::stable_partition(vectors_last.begin(), vectors_last.end(), [&](int i) { return p_.tensors[i].granule > 1; });
    orders.push_back(std::move(vectors_last));
    for (auto& order : orders) {
      variants_.push_back({order, Placer::kInOrder});
      if (max_granule_ > 1) variants_.push_back({order, Placer::kFillGaps});
    }
  }

  // The end of the layout of variant v at S, or kNoStart.
  int64_t end(const Variant& v, int64_t S, std::vector<int64_t>* offsets) const {
    switch (v.placer) {
      case Placer::kFillGaps: return place_filling_gaps(p_, v.order, S, max_granule_, offsets);
      case Placer::kBestFit: return place_best_fit(p_, S, false, offsets);
      case Placer::kRigidFirst: return place_best_fit(p_, S, true, offsets);
      case Placer::kInOrder: break;
    }
    return place_in_order(p_, v.order, S, offsets);
  }

  bool fits(const Variant& v, int64_t S) const {
    int64_t e = end(v, S, nullptr);
    return e != kNoStart && e <= p_.ranks * S;
  }

  // Deficit-driven climb from `start`: the first S found feasible, or 0.
  int64_t climb(const Variant& v, int64_t start, int64_t limit) const {
    const int64_t a = p_.collective_align;
    int64_t S = start;
    for (int i = 0; i < kMaxJumps && S <= limit; ++i) {
      int64_t e = end(v, S, nullptr);
      if (e != kNoStart && e <= p_.ranks * S) return S;
      // m*S must grow by at least the overflow for this order to fit.
      int64_t overflow = e == kNoStart ? a * p_.ranks : e - p_.ranks * S;
      S += round_up(std::max<int64_t>(1, (overflow + p_.ranks - 1) / p_.ranks), a);
    }
    return 0;
  }

  const std::vector<Variant>& variants() const { return variants_; }

 private:
  const UnitProblem& p_;
  int64_t max_granule_ = 1;
  std::vector<Variant> variants_;
};

}  // namespace

ContiguousSolution ragged_search(const UnitProblem& problem) {
  ContiguousSolution best = vescale_paper_search(problem);
  const int64_t a = problem.collective_align;
  const int64_t lower = lower_bound_shard_size(problem);
  if (best.shard_size == lower) return best;

  Search search(problem);
  const Variant* winner = nullptr;
  int64_t best_S = best.shard_size;
  for (const Variant& v : search.variants()) {
    int64_t S = search.climb(v, lower, best_S - a);
    if (S != 0 && S < best_S) {
      best_S = S;
      winner = &v;
    }
  }
  // Structured sizes: multiples of the row lengths' LCM (every cut on a row of
  // every tensor, as Megatron-FSDP builds its buckets) just above the bound.
  int64_t rows_lcm = a;
  for (const PlanTensor& t : problem.tensors) {
    rows_lcm = std::lcm(rows_lcm, t.dim0_stride);
    if (rows_lcm >= best_S) break;
  }
  for (int64_t S = round_up(lower, rows_lcm), tries = 0; S < best_S && tries < kStructuredTries; S += rows_lcm, ++tries) {
    for (const Variant& v : search.variants()) {
      if (search.fits(v, S)) {
        best_S = S;
        winner = &v;
        break;
      }
    }
  }
  // Feasibility is not monotone in S: look just below the best for smaller wins.
  for (int64_t S = std::max(lower, best_S - kRefineSteps * a); S < best_S; S += a) {
    for (const Variant& v : search.variants()) {
      if (search.fits(v, S)) {
        best_S = S;
        winner = &v;
        break;
      }
    }
  }
  if (winner == nullptr) return best;
  best.shard_size = best_S;
  best.offsets.assign(problem.tensors.size(), 0);
  search.end(*winner, best_S, &best.offsets);
  return best;
}

}  // namespace ragged::planner
