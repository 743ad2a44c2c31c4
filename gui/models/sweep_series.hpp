#pragma once
// The Sweep tab's charts as plain data: per strategy, throughput and peak
// memory against the GPU count (8 ... 16,384 on a log axis), and the GPU
// ranges where no strategy fits in HBM (shaded). No Qt.

#include <cstdint>
#include <string>
#include <vector>

#include "gui/models/simulation_results_model.hpp"

namespace ragged::gui {

// Powers of two from `from` to `to` (8, 16, ..., 16384 by default).
std::vector<int64_t> sweep_gpu_counts(int64_t from = 8, int64_t to = 16384);

struct SweepPoint {
  int64_t gpus = 0;
  double tokens_per_s_per_gpu = 0;
  int64_t peak_bytes = 0;
  bool oom = false;
  int row = 0;  // in the results it came from (a click opens that configuration)
};

struct SweepSeries {
  std::string strategy;
  std::vector<SweepPoint> points;  // by GPU count, finished simulations only
};

std::vector<SweepSeries> sweep_series(const std::vector<SimulationRow>& rows);

// The point of `strategy` nearest `gpus` on the log axis (a click at that
// x); nullptr when the strategy has no finished point.
const SweepPoint* nearest_point(const std::vector<SweepSeries>& series, const std::string& strategy, double gpus);

struct GpuRange {
  int64_t from = 0;
  int64_t to = 0;
};

// Consecutive swept GPU counts at which every strategy simulated runs out of memory.
std::vector<GpuRange> oom_ranges(const std::vector<SweepSeries>& series);

// What the caching allocator may reserve on the swept GPU (the HBM less the
// CUDA context and NCCL; 0 when nothing finished).
int64_t sweep_capacity_bytes(const std::vector<SimulationRow>& rows);

}  // namespace ragged::gui
