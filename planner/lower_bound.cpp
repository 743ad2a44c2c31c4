#include "planner/lower_bound.hpp"

#include <algorithm>
#include <functional>
#include <vector>
#include <numeric>

#include "planner/placement.hpp"

namespace ragged::planner {
namespace {

// Longest tensor that can start in a shard and cross only its end boundary.
int64_t single_crossing_capacity(int64_t S, int64_t g) { return S + g * (S / g); }

bool tensor_ok(const PlanTensor& t, int64_t S) {
  if (t.elements <= S) return true;
  if (t.granule > S) return false;  // a granule longer than a shard must straddle one
  return S % t.granule == 0 || t.elements <= single_crossing_capacity(S, t.granule);
}

// The smallest S' >= S, a multiple of `align`, for which tensor t is fine.
int64_t next_ok(const PlanTensor& t, int64_t S, int64_t align) {
  if (tensor_ok(t, S)) return S;
  const int64_t g = t.granule;
  // Any valid S' is at least the tensor itself, or a multiple of g, or large
  // enough for a single crossing to hold the tensor. Either a multiple of lcm(g, align) at or above max(S, g) ...
  const int64_t step = std::lcm(g, align);
  int64_t multiple = round_up(std::max(S, g), step);
  // ... or the first S whose single crossing holds the tensor (capacity is
  // non-decreasing in S): binary search, then align.
  int64_t lo = std::max(S, g), hi = std::max(lo, t.elements);
  while (lo < hi) {
    int64_t mid = lo + (hi - lo) / 2;
    if (single_crossing_capacity(mid, g) >= t.elements) hi = mid;
    else lo = mid + 1;
  }
  int64_t crossing = round_up(lo, align);
  return std::min({multiple, crossing, round_up(std::max(S, t.elements), align)});
}

// Whole-tensor items (one granule, e <= g) are bin packing: of the j*m + 1
// largest, some shard holds j + 1, so S is at least the sum of the j + 1
// smallest of them (items j*m - j + 1 ... j*m + 1 in decreasing order).
int64_t pigeonhole_bound(const UnitProblem& problem) {
  std::vector<int64_t> whole;
  for (const PlanTensor& t : problem.tensors) {
    if (t.elements <= t.granule) whole.push_back(t.elements);
  }
  std::sort(whole.begin(), whole.end(), std::greater<>());
  const int64_t m = problem.ranks, n = static_cast<int64_t>(whole.size());
  int64_t bound = 0;
  for (int64_t j = 1; j * m + 1 <= n; ++j) {
    int64_t load = 0;
    for (int64_t i = j * m - j; i <= j * m; ++i) load += whole[i];  // 0-based positions jm-j .. jm
    bound = std::max(bound, load);
  }
  return bound;
}

}  // namespace

bool meets_tensor_conditions(const UnitProblem& problem, int64_t S) {
  return std::all_of(problem.tensors.begin(), problem.tensors.end(), [&](const PlanTensor& t) { return tensor_ok(t, S); });
}

int64_t lower_bound_shard_size(const UnitProblem& problem) {
  const int64_t align = problem.collective_align;
  const int64_t total = problem.total_elements();
  int64_t S = round_up(std::max<int64_t>({1, (total + problem.ranks - 1) / problem.ranks, pigeonhole_bound(problem)}), align);
  // Every failing tensor needs at least next_ok(t, S): jump to the largest.
  for (;;) {
    int64_t next = S;
    for (const PlanTensor& t : problem.tensors) next = std::max(next, next_ok(t, S, align));
    if (next == S) return S;
    S = next;
  }
}

}  // namespace ragged::planner
