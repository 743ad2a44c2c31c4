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
    case COMPUTE_FWD:
    case TRAIN_METRICS: *phase = UnitPhase::kForward; return true;  // the head's forward math, no gradient
    case COMPUTE_BWD: *phase = UnitPhase::kBackward; return true;
    case RECOMPUTE: *phase = UnitPhase::kRecompute; return true;
    case ALL_GATHER: *phase = UnitPhase::kAllGather; return true;
    case REDUCE_SCATTER:
    case ALL_REDUCE: *phase = UnitPhase::kReduceScatter; return true;
    case COPY_IN:
    case COPY_OUT:
    case CAST:
    case SCALE:
    case GRAD_ACCUMULATE: *phase = UnitPhase::kCopies; return true;
    case OPTIMIZER:
    case ALL_TO_ALL: *phase = UnitPhase::kOptimizer; return true;
    default: return false;
  }
}

namespace {

// Each phase the sum of its kinds, in kind order, divided by `divide`.
std::array<double, kUnitPhases> phases_of(const KindSeconds& kinds, double divide) {
  std::array<double, kUnitPhases> seconds{};
  for (const auto& [kind, s] : kinds) {
    UnitPhase phase;
    if (phase_of(kind, &phase)) seconds[static_cast<size_t>(phase)] += s;
  }
  for (double& s : seconds) s /= divide;
  return seconds;
}

}  // namespace

double UnitTimes::total() const {
  double sum = 0;
  for (double s : seconds) sum += s;
  return sum;
}

std::map<int, KindSeconds> kind_seconds_by_unit(const Trace& trace, int rank) {
  std::map<int, KindSeconds> out;
  for (const Event& e : trace.events()) {
    if (rank != kAllRanks && e.rank() != rank) continue;
    out[e.unit()][e.kind()] += static_cast<double>(e.end_ns() - e.start_ns()) * 1e-9;
  }
  const double steps = std::max(1, step_count(trace));
  for (auto& [unit, kinds] : out) {
    for (auto& [kind, s] : kinds) s /= steps;
  }
  return out;
}

std::vector<UnitTimes> unit_times(const Trace& trace, int rank) {
  std::map<int, std::string> names;
  for (const Event& e : trace.events()) {
    if (e.kind() == COMPUTE_FWD && (rank == kAllRanks || e.rank() == rank) && !names.count(e.unit())) {
      names[e.unit()] = e.name().substr(0, e.name().find(' '));
    }
  }
  std::vector<UnitTimes> out;
  for (auto& [unit, kinds] : kind_seconds_by_unit(trace, rank)) {
    if (unit < 0) continue;
    UnitTimes row;
    row.unit = unit;
    row.name = names.count(unit) ? names[unit] : fmt::format("unit {}", unit);
    row.seconds = phases_of(kinds, 1);
    row.kinds = std::move(kinds);
    out.push_back(std::move(row));
  }
  return out;
}

bool is_block_unit(std::string_view name) { return name.rfind("layers.", 0) == 0; }

std::string averaged_blocks_name(size_t count) { return fmt::format("layers (mean of {})", count); }

// The blocks' kinds are summed before their phases, and the mean taken
// last, so the rows `ragged simulate` prints stay what they were.
std::vector<UnitTimes> with_blocks_averaged(const std::vector<UnitTimes>& rows) {
  std::vector<UnitTimes> out;
  UnitTimes blocks;
  int count = 0;
  auto flush = [&] {
    if (count == 0) return;
    blocks.seconds = phases_of(blocks.kinds, count);
    for (auto& [kind, s] : blocks.kinds) s /= count;
    blocks.units = count;
    blocks.name = averaged_blocks_name(static_cast<size_t>(count));
    out.push_back(blocks);
    count = 0;
  };
  for (const UnitTimes& row : rows) {
    if (!is_block_unit(row.name)) {
      flush();
      out.push_back(row);
      continue;
    }
    if (count == 0) blocks = row;
    else {
      for (const auto& [kind, s] : row.kinds) blocks.kinds[kind] += s;
    }
    ++count;
  }
  flush();
  return out;
}

}  // namespace ragged::traces
