#include "backend/expert_rows.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "common/errors.hpp"

namespace ragged::backend {
namespace {

// L, from counts of ranks x L entries.
int64_t local_experts(const std::vector<int64_t>& counts, int ranks) {
  RAGGED_ASSERT(ranks >= 1 && !counts.empty() && static_cast<int64_t>(counts.size()) % ranks == 0,
                fmt::format("expert rows: {} counts are not ranks x local experts for {} ranks", counts.size(), ranks));
  return static_cast<int64_t>(counts.size()) / ranks;
}

}  // namespace

std::vector<int64_t> expert_row_counts(const std::vector<int64_t>& offsets, int ranks) {
  RAGGED_ASSERT(offsets.size() >= 2 && ranks >= 1 && (offsets.size() - 1) % static_cast<size_t>(ranks) == 0,
                fmt::format("expert rows: {} experts do not split over {} ranks", offsets.size() - 1, ranks));
  std::vector<int64_t> counts(offsets.size() - 1);
  for (size_t e = 0; e < counts.size(); ++e) {
    counts[e] = offsets[e + 1] - offsets[e];
    RAGGED_ASSERT(counts[e] >= 0, "expert rows: offsets grow");
  }
  return counts;  // expert e = r L + j is entry r L + j
}

std::vector<RowBlock> source_row_blocks(const std::vector<int64_t>& counts, int ranks) {
  const int64_t local = local_experts(counts, ranks);
  std::vector<RowBlock> out;
  int64_t row = 0;
  for (int r = 0; r < ranks; ++r) {
    for (int64_t j = 0; j < local; ++j) {
      const int64_t n = counts[static_cast<size_t>(r * local + j)];
      out.push_back(RowBlock{r, row, n});
      row += n;
    }
  }
  return out;
}

std::vector<ExpertRun> owner_expert_runs(const std::vector<int64_t>& received, int ranks) {
  const int64_t local = local_experts(received, ranks);
  std::vector<ExpertRun> runs(static_cast<size_t>(local));
  int64_t row = 0;
  for (int64_t j = 0; j < local; ++j) {
    runs[static_cast<size_t>(j)].first = row;
    for (int s = 0; s < ranks; ++s) row += received[static_cast<size_t>(s * local + j)];
    runs[static_cast<size_t>(j)].rows = row - runs[static_cast<size_t>(j)].first;
  }
  return runs;
}

std::vector<RowBlock> owner_row_blocks(const std::vector<int64_t>& received, int ranks) {
  const int64_t local = local_experts(received, ranks);
  const std::vector<ExpertRun> runs = owner_expert_runs(received, ranks);
  std::vector<int64_t> next(runs.size());
  std::transform(runs.begin(), runs.end(), next.begin(), [](const ExpertRun& run) { return run.first; });
  std::vector<RowBlock> out;
  for (int s = 0; s < ranks; ++s) {
    for (int64_t j = 0; j < local; ++j) {
      const int64_t n = received[static_cast<size_t>(s * local + j)];
      RAGGED_ASSERT(n >= 0, "expert rows: a negative count received");
      out.push_back(RowBlock{s, next[static_cast<size_t>(j)], n});
      next[static_cast<size_t>(j)] += n;
    }
  }
  return out;
}

int64_t owner_row_bound(int ranks, int64_t tokens, int64_t top_k, int64_t local) {
  return ranks * tokens * std::min(top_k, local);
}

}  // namespace ragged::backend
