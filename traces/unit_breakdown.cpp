#include "traces/unit_breakdown.hpp"

#include <algorithm>
#include <map>

#include <fmt/format.h>

namespace ragged::traces {

std::string_view unit_phase_name(UnitPhase phase) {
  switch (phase) {
    case UnitPhase::kForward: return "forward";
    case UnitPhase::kBackward: return "backward";
    case UnitPhase::kRecompute: return "recompute";
    case UnitPhase::kAllGather: return "all-gather";
    case UnitPhase::kReduceScatter: return "reduce-scatter";
    case UnitPhase::kCopies: return "copies+casts";
    case UnitPhase::kOptimizer: return "optimizer";
  }
  return "?";
}

bool phase_of(OpKind kind, UnitPhase* phase) {
  switch (kind) {
    case COMPUTE_FWD: *phase = UnitPhase::kForward; return true;
    case COMPUTE_BWD: *phase = UnitPhase::kBackward; return true;
    case RECOMPUTE: *phase = UnitPhase::kRecompute; return true;
    case ALL_GATHER: *phase = UnitPhase::kAllGather; return true;
    case REDUCE_SCATTER:
    case ALL_REDUCE: *phase = UnitPhase::kReduceScatter; return true;
    case COPY_IN:
    case COPY_OUT:
    case CAST:
    case GRAD_ACCUMULATE: *phase = UnitPhase::kCopies; return true;
    case OPTIMIZER:
    case ALL_TO_ALL: *phase = UnitPhase::kOptimizer; return true;
    default: return false;
  }
}

double UnitTimes::total() const {
  double sum = 0;
  for (double s : seconds) sum += s;
  return sum;
}

std::vector<UnitTimes> unit_times(const Trace& trace, int rank) {
  std::map<int, UnitTimes> rows;
  for (const Event& e : trace.events()) {
    if (e.unit() < 0 || (rank != kAllRanks && e.rank() != rank)) continue;
    UnitTimes& row = rows[e.unit()];
    row.unit = e.unit();
    if (row.name.empty() && e.kind() == COMPUTE_FWD) row.name = e.name().substr(0, e.name().find(' '));
    UnitPhase phase;
    if (phase_of(e.kind(), &phase)) row.seconds[static_cast<size_t>(phase)] += static_cast<double>(e.end_ns() - e.start_ns()) * 1e-9;
  }
  const double steps = std::max(1, step_count(trace));
  std::vector<UnitTimes> out;
  for (auto& [unit, row] : rows) {
    if (row.name.empty()) row.name = fmt::format("unit {}", unit);
    for (double& s : row.seconds) s /= steps;
    out.push_back(std::move(row));
  }
  return out;
}

std::vector<UnitTimes> with_blocks_averaged(const std::vector<UnitTimes>& rows) {
  std::vector<UnitTimes> out;
  UnitTimes blocks;
  int count = 0;
  auto flush = [&] {
    if (count == 0) return;
    for (double& s : blocks.seconds) s /= count;
    blocks.units = count;
    blocks.name = count == 1 ? blocks.name : fmt::format("layers (mean of {})", count);
    out.push_back(blocks);
    count = 0;
  };
  for (const UnitTimes& row : rows) {
    if (row.name.rfind("layers.", 0) != 0) {
      flush();
      out.push_back(row);
      continue;
    }
    if (count == 0) blocks = row;
    else {
      for (size_t i = 0; i < blocks.seconds.size(); ++i) blocks.seconds[i] += row.seconds[i];
    }
    ++count;
  }
  flush();
  return out;
}

}  // namespace ragged::traces
