#pragma once
// One rank's streams as the Timeline tab draws them: a lane per stream with
// its ops as bars, and the memory curve on the same time axis. Zoomed out,
// neighbouring bars narrower than a pixel merge into one aggregated bar (how
// many ops it holds is kept), so a whole step of a 10,240-GPU run draws a
// few thousand rectangles at most. Plain code, no Qt.

#include <cstdint>
#include <string>
#include <vector>

#include "traces/trace.pb.h"

namespace ragged::gui {

struct TimelineBar {
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  traces::OpKind kind = traces::OP_KIND_UNSPECIFIED;  // the longest op's kind when aggregated
  int ops = 1;         // ops merged into this bar
  int event = -1;      // index into Trace::events of its (longest) op
  int64_t op_ns = 0;   // that op's duration
  int ranks = 1;       // every rank: the ranks whose events of this op the bar spans
};

struct TimelineLane {
  traces::Stream stream = traces::STREAM_UNSPECIFIED;
  int rank = -1;  // a pipeline's stage lane: its rank; -1: the lane is a stream's
  std::string name;
  std::vector<TimelineBar> bars;  // by start time
};

struct MemoryPoint {
  int64_t time_ns = 0;
  int64_t allocated = 0;
  int64_t reserved = 0;
  int64_t state_and_buffers = 0;
};

// What a memory curve shows. The caching allocator's figures are the
// simulator's (a measured run reports its arena as reserved); the state and
// parameter/gradient buffers are counted alike by both executors, so a
// predicted and a measured curve compare only on that one.
enum class MemoryQuantity {
  kAllocator,        // reserved (the curve) and allocated
  kStateAndBuffers,  // persistent state + parameter and gradient buffers
};

// The value a curve of `quantity` plots for `point` (reserved for kAllocator).
int64_t memory_value(const MemoryPoint& point, MemoryQuantity quantity);
// The axis label: what the curve counts.
std::string memory_axis_label(MemoryQuantity quantity);

// build_timeline's rank for a multi-rank trace seen whole: each op one bar
// from its first start to its last end over the ranks.
inline constexpr int kEveryRank = -2;

struct Timeline {
  int rank = 0;            // kEveryRank: every traced rank
  int memory_rank = 0;     // whose memory curve is drawn (every rank: the highest reserved peak)
  int step = -1;  // -1: every step
  std::vector<int> ranks;  // the trace's traced ranks (the drill-down choices)
  int64_t begin_ns = 0;
  int64_t end_ns = 0;
  std::vector<TimelineLane> lanes;  // in stream order, only streams with events
  std::vector<MemoryPoint> memory;  // by time
  int64_t peak_reserved = 0;
  int64_t peak_state_and_buffers = 0;  // 0: the trace predates the count

  int64_t peak(MemoryQuantity quantity) const;

  size_t bar_count() const;
};

// The timeline of `rank` (-1: the first traced rank; kEveryRank: all of a
// multi-rank trace's ranks, aggregated) and `step` (-1: every step; a step
// keeps the memory samples within its events' span). Alloc and free events
// (instants) stay out of the lanes; they show in the memory curve. A
// pipeline's trace (its ranks send to each other) seen whole runs a
// different Program on each stage: a lane per stage, its rank's compute,
// the stages in rank order (the schedule's staircase).
Timeline build_timeline(const traces::Trace& trace, int rank = -1, int step = -1);

// The first step the events of a trace carry (a measured trace's first measured step).
int first_step(const traces::Trace& trace);
// Every step the events of a trace carry, in order (a measured trace's measured steps).
std::vector<int> trace_steps(const traces::Trace& trace);

// The bars of `lane` overlapping [from_ns, to_ns), neighbours closer than
// `ns_per_pixel` merged: at most about (to - from) / ns_per_pixel bars.
std::vector<TimelineBar> visible_bars(const TimelineLane& lane, int64_t from_ns, int64_t to_ns, double ns_per_pixel);

// The memory curve in [from_ns, to_ns) with at most one point per pixel
// (each pixel keeps its highest sample of `quantity`), plus the sample before.
std::vector<MemoryPoint> visible_memory(const std::vector<MemoryPoint>& memory, int64_t from_ns, int64_t to_ns,
                                        double ns_per_pixel, MemoryQuantity quantity = MemoryQuantity::kAllocator);

// The bar of `lane` under `time_ns` (within half a pixel), nullptr if none.
const TimelineBar* bar_at(const TimelineLane& lane, int64_t time_ns, double ns_per_pixel);

}  // namespace ragged::gui
