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
    case UnitPhase::kMesh: return "tp/cp/ep";
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

bool on_mesh_stream(Stream stream) {
  return stream == TENSOR_PARALLEL_STREAM || stream == CONTEXT_PARALLEL_STREAM || stream == EXPERT_PARALLEL_STREAM ||
         stream == PIPELINE_SEND_STREAM || stream == PIPELINE_RECV_STREAM;
}

namespace {

// Each phase the sum of its kinds, in kind order, divided by `divide`.
std::array<double, kUnitPhases> phases_of(const KindSeconds& kinds, const KindSeconds& mesh_kinds, double divide) {
  std::array<double, kUnitPhases> seconds{};
  for (const auto& [kind, s] : kinds) {
    UnitPhase phase;
    if (phase_of(kind, &phase)) seconds[static_cast<size_t>(phase)] += s;
  }
  for (const auto& [kind, s] : mesh_kinds) seconds[static_cast<size_t>(UnitPhase::kMesh)] += s;
  for (double& s : seconds) s /= divide;
  return seconds;
}

// Per unit, the busy seconds per kind of the events off and on the mesh's
// streams, per step.
std::map<int, std::pair<KindSeconds, KindSeconds>> split_seconds_by_unit(const Trace& trace, int rank) {
  std::map<int, std::pair<KindSeconds, KindSeconds>> out;
  for (const Event& e : trace.events()) {
    if (rank != kAllRanks && e.rank() != rank) continue;
    auto& [off, on] = out[e.unit()];
    (on_mesh_stream(e.stream()) ? on : off)[e.kind()] += static_cast<double>(e.end_ns() - e.start_ns()) * 1e-9;
  }
  const double steps = std::max(1, step_count(trace));
  for (auto& [unit, both] : out) {
    for (KindSeconds* kinds : {&both.first, &both.second}) {
      for (auto& [kind, s] : *kinds) s /= steps;
    }
  }
  return out;
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
  for (auto& [unit, both] : split_seconds_by_unit(trace, rank)) {
    if (unit < 0) continue;
    UnitTimes row;
    row.unit = unit;
    row.name = names.count(unit) ? names[unit] : fmt::format("unit {}", unit);
    row.seconds = phases_of(both.first, both.second, 1);
    row.kinds = std::move(both.first);
    row.mesh_kinds = std::move(both.second);
    out.push_back(std::move(row));
  }
  return out;
}

bool is_block_unit(std::string_view name) {
  return name.rfind("layers.", 0) == 0 && !is_experts_unit(name);
}

bool is_experts_unit(std::string_view name) {
  constexpr std::string_view kSuffix = ".experts";
  return name.rfind("layers.", 0) == 0 && name.size() > kSuffix.size() &&
         name.substr(name.size() - kSuffix.size()) == kSuffix;
}

std::string averaged_blocks_name(size_t count) { return fmt::format("layers (mean of {})", count); }
std::string averaged_experts_name(size_t count) { return fmt::format("experts (mean of {})", count); }

// The blocks' kinds are summed before their phases, and the mean taken
// last, so the rows `ragged simulate` prints stay what they were. The
// blocks' row stands where the first block was, the routed experts' (units
// of their own under expert parallelism) after it.
std::vector<UnitTimes> with_blocks_averaged(const std::vector<UnitTimes>& rows) {
  std::vector<UnitTimes> out;
  struct Average {
    UnitTimes row;
    int count = 0;
    int64_t at = -1;  // its place in `out`
  };
  Average blocks, experts;
  for (const UnitTimes& row : rows) {
    Average* into = is_block_unit(row.name) ? &blocks : is_experts_unit(row.name) ? &experts : nullptr;
    if (into == nullptr) {
      out.push_back(row);
      continue;
    }
    if (into->count++ == 0) {
      into->row = row;
      into->at = static_cast<int64_t>(out.size());
      out.emplace_back();
      continue;
    }
    for (const auto& [kind, s] : row.kinds) into->row.kinds[kind] += s;
    for (const auto& [kind, s] : row.mesh_kinds) into->row.mesh_kinds[kind] += s;
  }
  for (Average* a : {&blocks, &experts}) {
    if (a->count == 0) continue;
    UnitTimes& row = a->row;
    row.seconds = phases_of(row.kinds, row.mesh_kinds, a->count);
    for (auto& [kind, s] : row.kinds) s /= a->count;
    for (auto& [kind, s] : row.mesh_kinds) s /= a->count;
    row.units = a->count;
    const auto count = static_cast<size_t>(a->count);
    row.name = a == &blocks ? averaged_blocks_name(count) : averaged_experts_name(count);
    out[static_cast<size_t>(a->at)] = row;
  }
  return out;
}

}  // namespace ragged::traces
