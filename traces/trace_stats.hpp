#pragma once
// Exact aggregates over a trace, shared by reports, the simulator's summary
// and the predicted-vs-measured comparison.

#include <cstdint>
#include <vector>

#include "traces/trace.pb.h"

namespace ragged::traces {

inline constexpr int kAllRanks = -1;

struct KindTotals {
  OpKind kind = OP_KIND_UNSPECIFIED;
  int64_t count = 0;
  double busy_s = 0;   // sum of event durations (overlaps counted twice)
  int64_t bytes = 0;
  double flops = 0;
};

// One entry per op kind present among the events of `rank` (all ranks by
// default), in enum order.
std::vector<KindTotals> totals_by_kind(const Trace& trace, int rank = kAllRanks);

// Largest allocated / reserved bytes among the memory samples; 0 when none.
int64_t peak_allocated(const Trace& trace, int rank = kAllRanks);
int64_t peak_reserved(const Trace& trace, int rank = kAllRanks);

// From the earliest event start to the latest event end; 0 when no events.
double span_seconds(const Trace& trace);

// Length of the union of the intervals of the events of `rank` on the
// compute stream (`compute`) or on the collective streams (all-gather,
// reduce-scatter, all-reduce: !`compute`);
// alloc and free take no device time and are left out.
double busy_seconds(const Trace& trace, bool compute, int rank = kAllRanks);

}  // namespace ragged::traces
