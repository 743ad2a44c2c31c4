#include "traces/trace_compare.hpp"

#include <algorithm>

#include "common/errors.hpp"

namespace ragged::traces {

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
  OpJoin join = join_ops(predicted, measured);
  c.joined_ops = static_cast<int64_t>(join.ops.size());
  c.unmatched_ops = join.unmatched;
  c.kinds = kinds_of(join.ops);
  c.ops = std::move(join.ops);
  return c;
}

}  // namespace ragged::traces
