#pragma once
// Busy time per FSDP unit and phase (forward, backward, recompute,
// all-gather, reduce-scatter, copies, optimizer) of one rank's events: the
// per-unit table of `ragged simulate` and the dashboard's breakdown chart.

#include <array>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "traces/trace_stats.hpp"

namespace ragged::traces {

// kMesh: the device mesh's collectives (tensor, context and expert parallel
// streams, pipeline sends and receives), whatever their kind; the other
// phases are FSDP's and the compute's.
enum class UnitPhase { kForward, kBackward, kRecompute, kAllGather, kReduceScatter, kCopies, kOptimizer, kMesh };
inline constexpr int kUnitPhases = 8;

std::string_view unit_phase_name(UnitPhase phase);  // "forward", "all-gather", ...
// The phase an op kind counts in off the mesh's streams; false for alloc,
// free and waits.
bool phase_of(OpKind kind, UnitPhase* phase);
// Whether an event runs on a stream of the device mesh (tp, cp, ep).
bool on_mesh_stream(Stream stream);

// Busy seconds per op kind (sums of event durations; every kind present,
// alloc and free included).
using KindSeconds = std::map<OpKind, double>;

// Per unit of the events of `rank` (-1: the ops of no unit, the optimizer
// over every unit), per step (the trace's steps averaged).
std::map<int, KindSeconds> kind_seconds_by_unit(const Trace& trace, int rank = kAllRanks);

struct UnitTimes {
  int unit = 0;       // the first unit of the row
  std::string name;   // "embed", "layers.3", or "layers (mean of 80)"
  int units = 1;      // units averaged into the row
  std::array<double, kUnitPhases> seconds{};  // per step
  KindSeconds kinds;  // per step, what the phases add up, off the mesh's streams
  KindSeconds mesh_kinds;  // per step, the mesh's collectives (the kMesh phase)

  double total() const;
};

// One row per unit with events, in unit order; seconds are per step (the
// trace's steps averaged). Events of no unit (-1) are left out.
std::vector<UnitTimes> unit_times(const Trace& trace, int rank = kAllRanks);

// Transformer blocks ("layers.N") are the units averaged into one row,
// named "layers (mean of N)" by how many it averages; their routed experts
// ("layers.N.experts", a unit of their own under expert parallelism) into
// another, "experts (mean of N)".
bool is_block_unit(std::string_view name);
bool is_experts_unit(std::string_view name);
std::string averaged_blocks_name(size_t count);
std::string averaged_experts_name(size_t count);

// The transformer blocks as one row of their mean, where the first block
// stands, and their routed experts' units as another.
std::vector<UnitTimes> with_blocks_averaged(const std::vector<UnitTimes>& rows);

}  // namespace ragged::traces
