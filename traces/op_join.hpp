#pragma once
// A predicted and a measured trace joined op by op: every event carries the
// id of the Program op it executed, so the two traces' events of one op id
// (and one kind) are the same op, predicted and measured. Per op, then per op
// kind, with the largest differences first: where a prediction goes wrong.

#include <cstdint>
#include <string>
#include <vector>

#include "traces/trace.pb.h"

namespace ragged::traces {

// One Program op, predicted against measured.
struct OpComparison {
  uint64_t op_id = 0;
  OpKind kind = OP_KIND_UNSPECIFIED;
  Stream stream = STREAM_UNSPECIFIED;
  int unit = -1;
  std::string name;        // the predicted event's label
  double predicted_s = 0;  // the op's duration, mean over the trace's steps
  double measured_s = 0;
  double difference_s() const { return predicted_s - measured_s; }
  double relative_error() const { return measured_s > 0 ? difference_s() / measured_s : 0; }
};

// The ops of one kind, summed.
struct KindComparison {
  OpKind kind = OP_KIND_UNSPECIFIED;
  int64_t ops = 0;  // ops of this kind present in both traces
  double predicted_s = 0;
  double measured_s = 0;
  double difference_s() const { return predicted_s - measured_s; }
  double relative_error() const { return measured_s > 0 ? difference_s() / measured_s : 0; }
};

struct OpJoin {
  std::vector<OpComparison> ops;  // in op id order
  int64_t unmatched = 0;          // op ids in one trace only, or of another kind in the other
};

// The events of the first traced rank of each trace, joined by op id; each
// op's duration is its mean over the steps that trace holds (a prediction
// has one step, a measured run every measured step).
OpJoin join_ops(const Trace& predicted, const Trace& measured);

// One row per op kind of `ops`, in kind (enum) order.
std::vector<KindComparison> kinds_of(const std::vector<OpComparison>& ops);

// Largest |predicted - measured| first; ties keep their order.
std::vector<OpComparison> worst_ops_first(std::vector<OpComparison> ops);
std::vector<KindComparison> worst_kinds_first(std::vector<KindComparison> kinds);

}  // namespace ragged::traces
