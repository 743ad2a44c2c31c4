#include "planner/placement.hpp"

#include <algorithm>
#include <map>

namespace ragged::planner {
namespace {

int64_t positive_mod(int64_t value, int64_t modulus) {
  int64_t r = value % modulus;
  return r < 0 ? r + modulus : r;
}

// A valid start in [from, boundary) for a tensor that begins in the shard
// ending at `boundary`, or kNoStart. `from` is aligned.
int64_t start_in_shard(int64_t from, int64_t boundary, const PlanTensor& t, int64_t S, int64_t align) {
  if (from + t.elements <= boundary) return from;  // fits before the boundary
  const int64_t g = t.granule;
  // Crossing `boundary` needs (boundary - s) % g == 0, and s aligned.
  int64_t s = from + positive_mod(boundary - from, g);
  while (s < boundary && s % align != 0) s += g;
  if (s >= boundary) return kNoStart;
  // Crossing one boundary is always fine; crossing more needs S % g == 0.
  if (s + t.elements <= boundary + S || S % g == 0) return s;
  return kNoStart;
}

}  // namespace

int64_t round_up(int64_t value, int64_t multiple) { return (value + multiple - 1) / multiple * multiple; }

int64_t earliest_start(int64_t cursor, const PlanTensor& t, int64_t S, int64_t align) {
  const int64_t from = round_up(cursor, align);
  if (t.elements == 0) return from;
  const int64_t boundary = (from / S + 1) * S;
  int64_t s = start_in_shard(from, boundary, t, S, align);
  if (s != kNoStart) return s;
  // A fresh shard: every later shard looks the same (S is a multiple of
  // align), so if this one fails, all do.
  return start_in_shard(boundary, boundary + S, t, S, align);
}

int64_t place_in_order(const UnitProblem& problem, std::span<const int> order, int64_t S, std::vector<int64_t>* offsets) {
  int64_t cursor = 0;
  for (int i : order) {
    const PlanTensor& t = problem.tensors[i];
    int64_t s = earliest_start(cursor, t, S, problem.tensor_align);
    if (s == kNoStart) return kNoStart;
    if (offsets) (*offsets)[i] = s;
    cursor = s + t.elements;
  }
  return cursor;
}

int64_t place_filling_gaps(const UnitProblem& problem, std::span<const int> order, int64_t S, int64_t small_below,
                           std::vector<int64_t>* offsets) {
  std::vector<int> fillers;  // small tensors, largest first
  for (int i : order) {
    if (problem.tensors[i].elements < small_below) fillers.push_back(i);
  }
  std::stable_sort(fillers.begin(), fillers.end(),
                   [&](int a, int b) { return problem.tensors[a].elements > problem.tensors[b].elements; });
  std::vector<char> used(problem.tensors.size(), 0);
  const int64_t align = problem.tensor_align;
  int64_t cursor = 0;

  // Fills [cursor, limit) with unused fillers that fit entirely inside it.
  auto fill_gap = [&](int64_t limit) {
    for (int f : fillers) {
      if (used[f]) continue;
      const PlanTensor& t = problem.tensors[f];
      if (round_up(cursor, align) + t.elements > limit) continue;
      int64_t s = earliest_start(cursor, t, S, align);
      if (s == kNoStart || s + t.elements > limit) continue;
      used[f] = 1;
      if (offsets) (*offsets)[f] = s;
      cursor = s + t.elements;
    }
  };

  for (int i : order) {
    if (used[i]) continue;
    const PlanTensor& t = problem.tensors[i];
    if (t.elements < small_below) continue;  // placed as a filler
    int64_t s = earliest_start(cursor, t, S, align);
    if (s == kNoStart) return kNoStart;
    if (s > round_up(cursor, align)) {
      fill_gap(s);
      s = earliest_start(cursor, t, S, align);  // monotone: still <= the first answer
    }
    used[i] = 1;
    if (offsets) (*offsets)[i] = s;
    cursor = s + t.elements;
  }
  for (int f : fillers) {  // the fillers no gap took go at the end
    if (used[f]) continue;
    int64_t s = earliest_start(cursor, problem.tensors[f], S, align);
    if (s == kNoStart) return kNoStart;
    if (offsets) (*offsets)[f] = s;
    cursor = s + problem.tensors[f].elements;
  }
  return cursor;
}

int64_t place_best_fit(const UnitProblem& problem, int64_t S, bool rigid_first, std::vector<int64_t>* offsets) {
  struct TensorClass {
    int64_t elements;
    int64_t granule;
    std::vector<int> members;  // in model order
    size_t next = 0;
  };
  std::vector<TensorClass> classes;
  std::map<std::pair<int64_t, int64_t>, size_t> class_of;
  for (size_t i = 0; i < problem.tensors.size(); ++i) {
    const PlanTensor& t = problem.tensors[i];
    auto [it, inserted] = class_of.emplace(std::make_pair(t.elements, t.granule), classes.size());
    if (inserted) classes.push_back({t.elements, t.granule, {}, 0});
    classes[it->second].members.push_back(static_cast<int>(i));
  }
  const int64_t align = problem.tensor_align;
  int64_t cursor = 0;
  for (size_t placed = 0; placed < problem.tensors.size(); ++placed) {
    size_t best = classes.size();
    int64_t best_start = 0;
    bool best_fits = false;
    const int64_t from = round_up(cursor, align);
    for (size_t c = 0; c < classes.size(); ++c) {
      const TensorClass& k = classes[c];
      if (k.next == k.members.size()) continue;
      int64_t s = earliest_start(cursor, problem.tensors[k.members.front()], S, align);
      if (s == kNoStart) return kNoStart;
      bool fits = rigid_first && s - from < k.granule;
      bool better;
      if (best == classes.size()) {
        better = true;
      } else if (fits != best_fits) {
        better = fits;
      } else if (fits) {
        better = k.granule > classes[best].granule ||
                 (k.granule == classes[best].granule && (s < best_start || (s == best_start && k.elements > classes[best].elements)));
      } else {
        better = s < best_start || (s == best_start && k.elements > classes[best].elements);
      }
      if (better) {
        best = c;
        best_start = s;
        best_fits = fits;
      }
    }
    TensorClass& chosen = classes[best];
    int index = chosen.members[chosen.next++];
    if (offsets) (*offsets)[index] = best_start;
    cursor = best_start + chosen.elements;
  }
  return cursor;
}

}  // namespace ragged::planner
