// The veScale-FSDP paper's planning heuristic as published (arXiv 2602.22437;
// ../shared/reference/vescale.md): keep the model order (also try sorting by
// granularity or by shape); binary-search S over multiples of candidate
// alignments, the running LCMs of the granularities; an exact feasibility
// check per S.

#include <algorithm>
#include <numeric>
#include <set>

#include "planner/contiguous_search.hpp"
#include "planner/placement.hpp"

namespace ragged::planner {
namespace {

bool feasible(const UnitProblem& p, const std::vector<int>& order, int64_t S) {
  int64_t end = place_in_order(p, order, S, nullptr);
  return end != kNoStart && end <= p.ranks * S;
}

}  // namespace

int64_t trivially_feasible_shard_size(const UnitProblem& problem) {
  int64_t span = 0;
  for (const PlanTensor& t : problem.tensors) span = round_up(span, problem.tensor_align) + t.elements;
  return round_up(std::max<int64_t>(span, 1), problem.collective_align);
}

std::vector<std::vector<int>> paper_orders(const UnitProblem& problem) {
  std::vector<int> model(problem.tensors.size());
  std::iota(model.begin(), model.end(), 0);
  std::vector<int> by_granule = model, by_size = model;
  const auto& t = problem.tensors;
  std::stable_sort(by_granule.begin(), by_granule.end(), [&](int a, int b) { return t[a].granule > t[b].granule; });
  std::stable_sort(by_size.begin(), by_size.end(), [&](int a, int b) { return t[a].elements > t[b].elements; });
  return {model, by_granule, by_size};
}

ContiguousSolution vescale_paper_search(const UnitProblem& problem) {
  const int64_t a = problem.collective_align;
  const int64_t upper = trivially_feasible_shard_size(problem);
  const int64_t balanced = std::max<int64_t>(1, (problem.total_elements() + problem.ranks - 1) / problem.ranks);

  std::vector<int64_t> alignments = {a};
  std::set<int64_t> granules;
  for (const PlanTensor& t : problem.tensors) granules.insert(t.granule);
  for (int64_t g : granules) {
    int64_t next = std::lcm(alignments.back(), g);
    if (next > upper) break;
    if (next != alignments.back()) alignments.push_back(next);
  }

  ContiguousSolution best{upper, {}};
  std::vector<int> best_order;
  for (const auto& order : paper_orders(problem)) {
    for (int64_t alignment : alignments) {
      int64_t lo = (balanced + alignment - 1) / alignment;
      int64_t hi = (upper + alignment - 1) / alignment;
      if (!feasible(problem, order, hi * alignment)) continue;
      while (lo < hi) {  // assumes feasibility is monotone in S, as the paper does
        int64_t mid = lo + (hi - lo) / 2;
        if (feasible(problem, order, mid * alignment)) hi = mid;
        else lo = mid + 1;
      }
      if (hi * alignment < best.shard_size || best_order.empty()) {
        best.shard_size = hi * alignment;
        best_order = order;
      }
    }
  }
  if (best_order.empty()) best_order = paper_orders(problem).front();
  best.offsets.assign(problem.tensors.size(), 0);
  place_in_order(problem, best_order, best.shard_size, &best.offsets);
  return best;
}

UnitLayout contiguous_layout(const UnitProblem& problem, const ContiguousSolution& solution) {
  UnitLayout layout;
  layout.shard_size = solution.shard_size;
  layout.ranks = problem.ranks;
  layout.placement = Placement::kContiguous;
  layout.slots.reserve(problem.tensors.size());
  for (size_t i = 0; i < problem.tensors.size(); ++i) {
    layout.slots.push_back({solution.offsets[i], problem.tensors[i].elements});
  }
  return layout;
}

}  // namespace ragged::planner
