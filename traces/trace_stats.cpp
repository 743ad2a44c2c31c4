#include "traces/trace_stats.hpp"

#include <algorithm>
#include <limits>
#include <map>

namespace ragged::traces {
namespace {

bool matches(int rank, int32_t event_rank) { return rank == kAllRanks || rank == event_rank; }
bool in_step(int step, int32_t event_step) { return step == kAllSteps || step == event_step; }

// Dividing by the exact 1e9 rounds once, so 5000 ns is exactly 5e-6 s.
double ns_to_s(int64_t ns) { return static_cast<double>(ns) / 1e9; }

// Durations are summed in integer nanoseconds and converted once, so that the
// totals do not depend on event order.
struct Accumulator {
  int64_t count = 0;
  int64_t busy_ns = 0;
  int64_t bytes = 0;
  double flops = 0;
};

template <typename Field>
int64_t peak_memory(const Trace& trace, int rank, Field field) {
  int64_t peak = 0;
  for (const MemorySample& sample : trace.memory()) {
    if (matches(rank, sample.rank())) peak = std::max(peak, field(sample));
  }
  return peak;
}

}  // namespace

std::vector<KindTotals> totals_by_kind(const Trace& trace, int rank, int step) {
  std::map<int, Accumulator> by_kind;
  for (const Event& event : trace.events()) {
    if (!matches(rank, event.rank()) || !in_step(step, event.step())) continue;
    Accumulator& acc = by_kind[event.kind()];
    ++acc.count;
    acc.busy_ns += event.end_ns() - event.start_ns();
    acc.bytes += event.bytes();
    acc.flops += event.flops();
  }
  std::vector<KindTotals> totals;
  totals.reserve(by_kind.size());
  for (const auto& [kind, acc] : by_kind) {
    totals.push_back({static_cast<OpKind>(kind), acc.count, ns_to_s(acc.busy_ns), acc.bytes, acc.flops});
  }
  return totals;
}

int64_t peak_allocated(const Trace& trace, int rank) {
  return peak_memory(trace, rank, [](const MemorySample& s) { return s.allocated_bytes(); });
}

int64_t peak_reserved(const Trace& trace, int rank) {
  return peak_memory(trace, rank, [](const MemorySample& s) { return s.reserved_bytes(); });
}

int first_traced_rank(const Trace& trace) {
  return trace.metadata().traced_ranks_size() > 0 ? trace.metadata().traced_ranks(0) : kAllRanks;
}

double span_seconds(const Trace& trace) {
  if (trace.events().empty()) return 0;
  int64_t first = std::numeric_limits<int64_t>::max();
  int64_t last = std::numeric_limits<int64_t>::min();
  for (const Event& event : trace.events()) {
    first = std::min(first, event.start_ns());
    last = std::max(last, event.end_ns());
  }
  return ns_to_s(last - first);
}

int step_count(const Trace& trace) {
  int steps = 0;
  for (const Event& event : trace.events()) steps = std::max(steps, event.step() + 1);
  return steps;
}

double busy_seconds(const Trace& trace, bool compute, int rank, int step) {
  std::vector<std::pair<int64_t, int64_t>> intervals;
  for (const Event& event : trace.events()) {
    if (!matches(rank, event.rank()) || !in_step(step, event.step())) continue;
    const bool collective = event.stream() == ALL_GATHER_STREAM || event.stream() == REDUCE_SCATTER_STREAM ||
                            event.stream() == ALL_REDUCE_STREAM;
    if (compute ? event.stream() == COMPUTE : collective) intervals.emplace_back(event.start_ns(), event.end_ns());
  }
  std::sort(intervals.begin(), intervals.end());
  int64_t total = 0, cursor = std::numeric_limits<int64_t>::min();
  for (auto [start, end] : intervals) {
    start = std::max(start, cursor);
    if (end > start) {
      total += end - start;
      cursor = end;
    }
  }
  return ns_to_s(total);
}

}  // namespace ragged::traces
