#pragma once
// Predicted against measured, like with like: step time, exposed
// communication and MFU (the measured ones means over the measured steps),
// peak memory of the state and parameter/gradient buffers, and busy time per
// op and per op kind (each op's mean over the measured steps). Both traces
// carry Program op ids, so their events join op by op (traces/op_join); a
// difference points at one op kind, one unit, one stream.

#include <string>
#include <vector>

#include "traces/op_join.hpp"
#include "traces/trace.pb.h"

namespace ragged::traces {

struct TraceComparison {
  double predicted_step_s = 0;
  double measured_step_s = 0;
  // Peak of the persistent state plus the parameter and gradient buffers,
  // allocated at issue as the executors do: the prediction's
  // issue_order_peak_bytes against the run's peak_state_and_buffers_bytes.
  int64_t predicted_peak_bytes = 0;
  int64_t measured_peak_bytes = 0;
  // The same buffers on the simulated timeline, where each stream runs as far
  // ahead as its dependencies allow (not compared: the executors allocate at issue).
  int64_t predicted_concurrent_bytes = 0;
  // The persistent state within both peaks: the strategy's (predicted) and
  // what the executor holds (measured); the rest is buffers.
  int64_t predicted_persistent_bytes = 0;
  int64_t measured_persistent_bytes = 0;
  int64_t predicted_buffer_bytes() const { return predicted_peak_bytes - predicted_persistent_bytes; }
  int64_t measured_buffer_bytes() const { return measured_peak_bytes - measured_persistent_bytes; }
  // Side by side, not compared: the prediction's totals (activations,
  // workspaces and the caching allocator included) and what the executor
  // held (persistent state and its whole arena).
  int64_t predicted_reserved_bytes = 0;
  int64_t predicted_allocated_bytes = 0;
  int64_t measured_reserved_bytes = 0;
  int measured_steps = 1;
  std::vector<std::string> executor_notes;  // how the run's executor departs from the Program  // the per-op times and the summary are means over these
  double predicted_exposed_s = 0;  // communication the compute stream waits for
  double measured_exposed_s = 0;
  double predicted_mfu = 0;
  double measured_mfu = 0;
  int64_t joined_ops = 0;     // events matched by op id (on the first traced rank of each)
  int64_t unmatched_ops = 0;  // in one trace only
  std::vector<OpComparison> ops;      // the joined ops, in op id order
  std::vector<KindComparison> kinds;  // the same per op kind, in kind order

  double step_error() const { return measured_step_s > 0 ? (predicted_step_s - measured_step_s) / measured_step_s : 0; }
  double memory_error() const;
};

// Throws InputError when the first trace is not predicted or the second not measured.
TraceComparison compare_traces(const Trace& predicted, const Trace& measured);

}  // namespace ragged::traces
