#include "gui/models/sweep_series.hpp"

#include <algorithm>
#include <cmath>
#include <map>

#include "traces/metrics.hpp"

namespace ragged::gui {

std::vector<int64_t> sweep_gpu_counts(int64_t from, int64_t to) {
  std::vector<int64_t> out;
  for (int64_t g = std::max<int64_t>(1, from); g <= to; g *= 2) out.push_back(g);
  return out;
}

std::vector<SweepSeries> sweep_series(const std::vector<SimulationRow>& rows) {
  std::vector<SweepSeries> out;
  std::map<std::string, size_t> index;
  for (size_t i = 0; i < rows.size(); ++i) {
    const SimulationRow& r = rows[i];
    auto [it, added] = index.emplace(r.strategy, out.size());
    if (added) out.push_back({r.strategy, {}});
    const traces::Summary* s = r.summary();
    if (s == nullptr) continue;
    out[it->second].points.push_back({r.gpus, s->tokens_per_s_per_gpu(), s->peak_reserved_bytes(), s->oom(), static_cast<int>(i)});
  }
  for (SweepSeries& series : out) {
    std::stable_sort(series.points.begin(), series.points.end(), [](const auto& a, const auto& b) { return a.gpus < b.gpus; });
  }
  return out;
}

const SweepPoint* nearest_point(const std::vector<SweepSeries>& series, const std::string& strategy, double gpus) {
  const double at = std::log2(std::max(gpus, 1.0));
  const SweepPoint* best = nullptr;
  for (const SweepSeries& s : series) {
    if (s.strategy != strategy) continue;
    for (const SweepPoint& p : s.points) {
      const double off = std::abs(std::log2(static_cast<double>(p.gpus)) - at);
      if (best == nullptr || off < std::abs(std::log2(static_cast<double>(best->gpus)) - at)) best = &p;
    }
  }
  return best;
}

std::vector<GpuRange> oom_ranges(const std::vector<SweepSeries>& series) {
  std::map<int64_t, bool> all_oom;  // per GPU count: every strategy that finished there ran out
  for (const SweepSeries& s : series) {
    for (const SweepPoint& p : s.points) {
      auto [it, added] = all_oom.emplace(p.gpus, p.oom);
      if (!added) it->second = it->second && p.oom;
    }
  }
  std::vector<GpuRange> ranges;
  bool open = false;
  for (const auto& [gpus, oom] : all_oom) {
    if (oom && open) ranges.back().to = gpus;
    else if (oom) ranges.push_back({gpus, gpus});
    open = oom;
  }
  return ranges;
}

int64_t sweep_capacity_bytes(const std::vector<SimulationRow>& rows) {
  for (const SimulationRow& r : rows) {
    if (const traces::Summary* s = r.summary()) return traces::allocator_capacity_of(*s);
  }
  return 0;
}

}  // namespace ragged::gui
