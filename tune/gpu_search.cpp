#include "tune/gpu_search.hpp"

#include "common/errors.hpp"
#include "scenarios/scenario_rules.hpp"

namespace ragged::tune {
namespace {

SearchProgress for_count(const CountProgress& progress, int64_t gpus) {
  if (!progress) return {};
  return [progress, gpus](size_t done, size_t total) { progress(gpus, done, total); };
}

// Whether the constraints allow any candidate on `gpus` GPUs.
bool searchable(const Tuner& tuner, int64_t gpus) {
  try {
    return !enumerate_candidates(tuner.base_at(gpus), tuner.options().constraints).empty();
  } catch (const InputError&) {
    return false;
  }
}

}  // namespace

std::vector<GpuCountRow> search_gpu_counts(const Tuner& tuner, TaskRunner& runner, const std::vector<int64_t>& counts,
                                           const CountProgress& progress) {
  std::vector<GpuCountRow> rows;
  for (int64_t gpus : counts) {
    GpuCountRow row;
    row.gpus = gpus;
    try {
      enumerate_candidates(tuner.base_at(gpus), tuner.options().constraints);
    } catch (const InputError& e) {
      row.skipped = e.what();
    }
    if (row.skipped.empty()) row.result = tuner.search(runner, gpus, for_count(progress, gpus));
    rows.push_back(std::move(row));
  }
  return rows;
}

MinGpusResult find_min_gpus(const Tuner& tuner, TaskRunner& runner, int64_t upper, const CountProgress& progress) {
  const int64_t per_node = tuner.base().scenario.cluster().gpus_per_node();
  MinGpusResult out;
  out.upper = upper;
  std::vector<int64_t> counts;  // whole nodes on which a candidate can be formed
  for (int64_t gpus = per_node; gpus <= upper; gpus += per_node) {
    if (searchable(tuner, gpus)) counts.push_back(gpus);
  }
  auto fits = [&](size_t i) {
    const bool ok = tuner.fits_at(runner, counts[i], for_count(progress, counts[i]));
    out.probes.emplace_back(counts[i], ok);
    return ok;
  };
  // Gallop: indices 0, 1, 3, 7, ... (node counts doubling), then the last index.
  size_t low = 0, high = counts.size();  // counts[low - 1] does not fit (low > 0); counts[high] fits (high < size)
  bool found = false;
  for (size_t step = 1, i = 0; i < counts.size(); i = i + step, step *= 2) {
    if (fits(i)) {
      high = i;
      found = true;
      break;
    }
    low = i + 1;
  }
  if (!found && !counts.empty() && low < counts.size() && fits(counts.size() - 1)) {
    high = counts.size() - 1;
    found = true;
  }
  if (!found) return out;
  while (low < high) {
    const size_t mid = low + (high - low) / 2;
    if (fits(mid))
      high = mid;
    else
      low = mid + 1;
  }
  out.result = tuner.search(runner, counts[high], for_count(progress, counts[high]));
  return out;
}

}  // namespace ragged::tune
