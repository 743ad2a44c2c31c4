#include "traces/trace_compare.hpp"

#include <algorithm>
#include <map>

#include "common/errors.hpp"

namespace ragged::traces {
namespace {

// Mean duration of each op id over the steps of the first traced rank: a
// measured trace holds every measured step, and its summary is their mean.
std::map<uint64_t, std::pair<OpKind, double>> durations(const Trace& trace) {
  const int rank = trace.metadata().traced_ranks_size() ? trace.metadata().traced_ranks(0) : 0;
  std::map<uint64_t, std::pair<OpKind, int64_t>> total_ns;
  std::map<uint64_t, int> steps;
  for (const Event& e : trace.events()) {
    if (e.rank() != rank) continue;
    auto& [kind, ns] = total_ns[e.op_id()];
    kind = e.kind();
    ns += e.end_ns() - e.start_ns();
    ++steps[e.op_id()];
  }
  std::map<uint64_t, std::pair<OpKind, double>> out;
  for (const auto& [id, kind_ns] : total_ns) {
    out[id] = {kind_ns.first, static_cast<double>(kind_ns.second) * 1e-9 / steps[id]};
  }
  return out;
}

}  // namespace

double TraceComparison::memory_error() const {
  return measured_peak_bytes > 0
             ? static_cast<double>(predicted_peak_bytes - measured_peak_bytes) / static_cast<double>(measured_peak_bytes)
             : 0;
}

TraceComparison compare_traces(const Trace& predicted, const Trace& measured) {
  if (predicted.metadata().source() != PREDICTED) throw InputError("the first trace is not a predicted one (ragged simulate --trace)");
  if (measured.metadata().source() != MEASURED) throw InputError("the second trace is not a measured one (ragged run --trace)");
  TraceComparison c;
  c.predicted_step_s = predicted.summary().step_time_s();
  c.measured_step_s = measured.summary().step_time_s();
  c.predicted_peak_bytes = predicted.summary().issue_order_peak_bytes();
  c.measured_peak_bytes = measured.summary().peak_state_and_buffers_bytes();
  c.predicted_concurrent_bytes = predicted.summary().peak_state_and_buffers_bytes();
  c.predicted_persistent_bytes = predicted.summary().persistent_bytes();
  c.measured_persistent_bytes = measured.summary().persistent_bytes();
  c.predicted_reserved_bytes = predicted.summary().peak_reserved_bytes();
  c.predicted_allocated_bytes = predicted.summary().peak_allocated_bytes();
  c.measured_reserved_bytes = measured.summary().peak_reserved_bytes();
  c.measured_steps = std::max(1, measured.summary().per_step_size());
  c.executor_notes.assign(measured.metadata().executor_notes().begin(), measured.metadata().executor_notes().end());
  c.predicted_exposed_s = predicted.summary().exposed_comm_s();
  c.measured_exposed_s = measured.summary().exposed_comm_s();
  c.predicted_mfu = predicted.summary().mfu();
  c.measured_mfu = measured.summary().mfu();
  auto p = durations(predicted), m = durations(measured);
  std::map<OpKind, KindComparison> kinds;
  for (const auto& [id, kind_time] : p) {
    auto it = m.find(id);
    if (it == m.end() || it->second.first != kind_time.first) {
      ++c.unmatched_ops;
      continue;
    }
    ++c.joined_ops;
    KindComparison& k = kinds[kind_time.first];
    k.kind = kind_time.first;
    ++k.ops;
    k.predicted_s += kind_time.second;
    k.measured_s += it->second.second;
  }
  for (const auto& [id, kind_time] : m) c.unmatched_ops += p.count(id) ? 0 : 1;
  for (auto& [kind, k] : kinds) c.kinds.push_back(k);
  return c;
}

}  // namespace ragged::traces
