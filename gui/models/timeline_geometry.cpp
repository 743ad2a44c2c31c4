#include "gui/models/timeline_geometry.hpp"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include "traces/trace_names.hpp"

namespace ragged::gui {

size_t Timeline::bar_count() const {
  size_t n = 0;
  for (const auto& lane : lanes) n += lane.bars.size();
  return n;
}

int64_t memory_value(const MemoryPoint& point, MemoryQuantity quantity) {
  return quantity == MemoryQuantity::kStateAndBuffers ? point.state_and_buffers : point.reserved;
}

std::string memory_axis_label(MemoryQuantity quantity) {
  return quantity == MemoryQuantity::kStateAndBuffers ? "state + param/grad buffers"
                                                      : "allocator: reserved,\nallocated (dotted)";
}

int64_t Timeline::peak(MemoryQuantity quantity) const {
  return quantity == MemoryQuantity::kStateAndBuffers ? peak_state_and_buffers : peak_reserved;
}

int first_step(const traces::Trace& trace) {
  int step = -1;
  for (const traces::Event& e : trace.events()) step = step < 0 ? e.step() : std::min(step, e.step());
  return std::max(step, 0);
}

std::vector<int> trace_steps(const traces::Trace& trace) {
  std::set<int> steps;
  for (const traces::Event& e : trace.events()) steps.insert(e.step());
  return {steps.begin(), steps.end()};
}

Timeline build_timeline(const traces::Trace& trace, int rank, int step) {
  Timeline t;
  t.step = step;
  t.ranks.assign(trace.metadata().traced_ranks().begin(), trace.metadata().traced_ranks().end());
  if (t.ranks.empty() && trace.events_size() > 0) t.ranks.push_back(trace.events(0).rank());
  const bool every = rank == kEveryRank && t.ranks.size() > 1;
  t.rank = every ? kEveryRank : rank >= 0 ? rank : (t.ranks.empty() ? 0 : t.ranks.front());
  const bool stages = every && std::any_of(trace.events().begin(), trace.events().end(), [](const traces::Event& e) {
                        return e.kind() == traces::SEND || e.kind() == traces::RECV;
                      });
  std::map<int, TimelineLane> lanes;  // by stream, or by rank for stage lanes
  std::map<std::tuple<int, uint64_t, int>, size_t> bar_of;  // every rank: (stream, op, step) -> its bar
  bool any = false;
  for (int i = 0; i < trace.events_size(); ++i) {
    const traces::Event& e = trace.events(i);
    if ((!every && e.rank() != t.rank) || (step >= 0 && e.step() != step)) continue;
    t.begin_ns = any ? std::min(t.begin_ns, e.start_ns()) : e.start_ns();
    t.end_ns = any ? std::max(t.end_ns, e.end_ns()) : e.end_ns();
    any = true;
    if (e.kind() == traces::ALLOC || e.kind() == traces::FREE) continue;
    if (stages && e.stream() != traces::COMPUTE) continue;
    TimelineLane& lane = lanes[stages ? e.rank() : e.stream()];
    lane.stream = e.stream();
    if (stages) lane.rank = e.rank();
    const TimelineBar bar{e.start_ns(), e.end_ns(), e.kind(), 1, i, e.end_ns() - e.start_ns(), 1};
    if (!every || stages) {
      lane.bars.push_back(bar);
      continue;
    }
    // One bar per op: from its first start to its last end over the ranks, its longest event named.
    auto [it, added] = bar_of.emplace(std::tuple{e.stream(), e.op_id(), e.step()}, lane.bars.size());
    if (added) {
      lane.bars.push_back(bar);
      continue;
    }
    TimelineBar& into = lane.bars[it->second];
    into.start_ns = std::min(into.start_ns, bar.start_ns);
    into.end_ns = std::max(into.end_ns, bar.end_ns);
    ++into.ranks;
    if (bar.op_ns > into.op_ns) {
      into.event = i;
      into.op_ns = bar.op_ns;
    }
  }
  int stage = 0;
  for (auto& [key, lane] : lanes) {
    lane.name = stages ? "stage " + std::to_string(stage++) : std::string(traces::stream_name(lane.stream));
    std::stable_sort(lane.bars.begin(), lane.bars.end(), [](const auto& a, const auto& b) { return a.start_ns < b.start_ns; });
    t.lanes.push_back(std::move(lane));
  }
  auto in_span = [&](const traces::MemorySample& m) {
    return step < 0 || (m.time_ns() >= t.begin_ns && m.time_ns() <= t.end_ns);
  };
  // Every rank: the memory of the rank whose reserved bytes peak highest.
  t.memory_rank = t.rank;
  if (every) {
    int64_t highest = -1;
    for (const traces::MemorySample& m : trace.memory()) {
      if (in_span(m) && m.reserved_bytes() > highest) {
        highest = m.reserved_bytes();
        t.memory_rank = m.rank();
      }
    }
  }
  for (const traces::MemorySample& m : trace.memory()) {
    if (m.rank() != t.memory_rank || !in_span(m)) continue;
    t.memory.push_back({m.time_ns(), m.allocated_bytes(), m.reserved_bytes(), m.state_and_buffers_bytes()});
    t.peak_reserved = std::max(t.peak_reserved, m.reserved_bytes());
    t.peak_state_and_buffers = std::max(t.peak_state_and_buffers, m.state_and_buffers_bytes());
    if (step < 0) t.end_ns = std::max(t.end_ns, m.time_ns());
  }
  std::stable_sort(t.memory.begin(), t.memory.end(), [](const auto& a, const auto& b) { return a.time_ns < b.time_ns; });
  return t;
}

std::vector<TimelineBar> visible_bars(const TimelineLane& lane, int64_t from_ns, int64_t to_ns, double ns_per_pixel) {
  std::vector<TimelineBar> out;
  const int64_t pixel = std::max<int64_t>(1, static_cast<int64_t>(ns_per_pixel));
  for (const TimelineBar& bar : lane.bars) {
    if (bar.end_ns <= from_ns || bar.start_ns >= to_ns) continue;
    // Merge with the previous bar while the pair still fits in a pixel's gap.
    if (!out.empty() && bar.start_ns - out.back().end_ns < pixel &&
        (out.back().end_ns - out.back().start_ns < pixel || bar.end_ns - bar.start_ns < pixel)) {
      TimelineBar& into = out.back();
      if (bar.op_ns > into.op_ns) {
        into.kind = bar.kind;
        into.event = bar.event;
        into.op_ns = bar.op_ns;
      }
      into.end_ns = std::max(into.end_ns, bar.end_ns);
      into.ops += bar.ops;
      continue;
    }
    out.push_back(bar);
  }
  return out;
}

std::vector<MemoryPoint> visible_memory(const std::vector<MemoryPoint>& m, int64_t from_ns, int64_t to_ns,
                                        double ns_per_pixel, MemoryQuantity quantity) {
  std::vector<MemoryPoint> out;
  auto first = std::lower_bound(m.begin(), m.end(), from_ns, [](const MemoryPoint& p, int64_t t) { return p.time_ns < t; });
  if (first != m.begin()) --first;  // the level in force at from_ns
  const double pixel = std::max(1.0, ns_per_pixel);
  auto bucket = [&](int64_t t) { return t < from_ns ? -1 : static_cast<int64_t>(static_cast<double>(t - from_ns) / pixel); };
  for (auto it = first; it != m.end() && it->time_ns < to_ns; ++it) {
    if (!out.empty() && bucket(out.back().time_ns) == bucket(it->time_ns)) {
      if (memory_value(*it, quantity) >= memory_value(out.back(), quantity)) {
        out.back() = {out.back().time_ns, it->allocated, it->reserved, it->state_and_buffers};
      }
      continue;
    }
    out.push_back(*it);
  }
  return out;
}

const TimelineBar* bar_at(const TimelineLane& lane, int64_t time_ns, double ns_per_pixel) {
  const int64_t slack = static_cast<int64_t>(ns_per_pixel / 2);
  auto it = std::upper_bound(lane.bars.begin(), lane.bars.end(), time_ns + slack,
                             [](int64_t t, const TimelineBar& b) { return t < b.start_ns; });
  const TimelineBar* best = nullptr;
  // Bars are sorted by start; look back over the few that may still cover the time.
  for (int back = 0; it != lane.bars.begin() && back < 64; ++back) {
    --it;
    if (it->end_ns + slack >= time_ns) {
      if (best == nullptr || it->end_ns - it->start_ns > best->end_ns - best->start_ns) best = &*it;
    }
  }
  return best;
}

}  // namespace ragged::gui
