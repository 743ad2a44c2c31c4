#pragma once
// Exact aggregates over a trace, shared by reports, the simulator's summary
// and the predicted-vs-measured comparison.

#include <cstdint>
#include <vector>

#include "traces/trace.pb.h"

namespace ragged::traces {

inline constexpr int kAllRanks = -1;
inline constexpr int kAllSteps = -1;

struct KindTotals {
  OpKind kind = OP_KIND_UNSPECIFIED;
  int64_t count = 0;
  double busy_s = 0;   // sum of event durations (overlaps counted twice)
  int64_t bytes = 0;
  double flops = 0;
};

// One entry per op kind present among the events of `rank` and `step` (all
// by default), in enum order.
std::vector<KindTotals> totals_by_kind(const Trace& trace, int rank = kAllRanks, int step = kAllSteps);

// Largest allocated / reserved bytes among the memory samples; 0 when none.
int64_t peak_allocated(const Trace& trace, int rank = kAllRanks);
int64_t peak_reserved(const Trace& trace, int rank = kAllRanks);

// The rank a trace reports first (its summary's: a pipeline's trace holds
// every stage), or kAllRanks when it names none.
int first_traced_rank(const Trace& trace);

// From the earliest event start to the latest event end; 0 when no events.
double span_seconds(const Trace& trace);

// The steps the events carry (the largest step index + 1); 0 when no events.
int step_count(const Trace& trace);

// Length of the union of the intervals of the events of `rank` and `step`
// on the compute stream (`compute`) or on the collective streams
// (all-gather, reduce-scatter, all-reduce: !`compute`). An alloc or free
// counts for the time its executor spent on it: none in a prediction, the
// zero-filling of a buffer on the host.
double busy_seconds(const Trace& trace, bool compute, int rank = kAllRanks, int step = kAllSteps);

}  // namespace ragged::traces
