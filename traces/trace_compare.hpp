#pragma once
// Predicted against measured: step time, peak memory, and busy time per op
// kind. Both traces carry Program op ids, so their events join op by op; a
// difference points at one op kind, one unit, one stream.

#include <string>
#include <vector>

#include "traces/trace.pb.h"

namespace ragged::traces {

struct KindComparison {
  OpKind kind = OP_KIND_UNSPECIFIED;
  int64_t ops = 0;  // ops of this kind present in both traces
  double predicted_s = 0;
  double measured_s = 0;
  double relative_error() const { return measured_s > 0 ? (predicted_s - measured_s) / measured_s : 0; }
};

struct TraceComparison {
  double predicted_step_s = 0;
  double measured_step_s = 0;
  int64_t predicted_peak_bytes = 0;
  int64_t measured_peak_bytes = 0;
  double predicted_exposed_s = 0;  // communication the compute stream waits for
  double measured_exposed_s = 0;
  double predicted_mfu = 0;
  double measured_mfu = 0;
  int64_t joined_ops = 0;     // events matched by op id (on the first traced rank of each)
  int64_t unmatched_ops = 0;  // in one trace only
  std::vector<KindComparison> kinds;

  double step_error() const { return measured_step_s > 0 ? (predicted_step_s - measured_step_s) / measured_step_s : 0; }
  double memory_error() const;
};

// Throws InputError when the first trace is not predicted or the second not measured.
TraceComparison compare_traces(const Trace& predicted, const Trace& measured);

}  // namespace ragged::traces
