#pragma once
// How many GPUs: the best configuration on each of several GPU counts, and
// the fewest GPUs (whole nodes) on which the model trains at all. Without
// --global-batch-tokens the per-GPU batch stays the scenario's (the global
// batch grows with the GPUs, as `simulate --sweep` does); with it the
// global batch is fixed and a count it does not divide over is skipped.

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "tune/tuner.hpp"

namespace ragged::tune {

struct GpuCountRow {
  int64_t gpus = 0;
  std::optional<SearchResult> result;
  std::string skipped;  // why no search ran on this count
};

// `progress` gets the count searched with each update.
using CountProgress = std::function<void(int64_t gpus, size_t done, size_t total)>;

std::vector<GpuCountRow> search_gpu_counts(const Tuner& tuner, TaskRunner& runner, const std::vector<int64_t>& counts,
                                           const CountProgress& progress = {});

struct MinGpusResult {
  int64_t upper = 0;                             // the largest count considered
  std::vector<std::pair<int64_t, bool>> probes;  // counts tried and whether anything fit, in order
  std::optional<SearchResult> result;            // the full search on the smallest count that fits
};

// The smallest whole number of nodes (up to `upper` GPUs) on which some
// candidate fits: counts doubling from one node until one fits, then a
// binary search below it. It assumes that what fits on N GPUs fits on
// more (sharding over more GPUs only shrinks each one's share).
MinGpusResult find_min_gpus(const Tuner& tuner, TaskRunner& runner, int64_t upper, const CountProgress& progress = {});

}  // namespace ragged::tune
