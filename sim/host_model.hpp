#pragma once
// The framework's CPU thread: how long it takes to issue one op of the
// Program (its HostWork: framework ops dispatched and launched, tensors in
// foreach lists, per-parameter views). The executor lets no stream start an
// op before this thread has issued it (docs/SIMULATOR.md, "The CPU issue
// path"). Every constant carries its source there.

#include "planner/program.hpp"
#include "scenarios/scenario.pb.h"

namespace ragged::sim {

struct HostCosts {
  double framework_op_seconds = 0;   // one eager torch op: Python, dispatcher, kernel launch
  double list_tensor_seconds = 0;    // one tensor of a foreach/split/cat list (copy preparation)
  double param_view_seconds = 0;     // one parameter's unsharded view set up (view + setattr)
  double param_reshard_seconds = 0;  // one parameter's sharded view restored

  // Eager PyTorch issuing from one Python thread (GPU presets), on a host
  // `slowdown` times slower than the x86 one the costs were measured on.
  static HostCosts pytorch_eager(double slowdown = 1.0);
  // No host path (the CPU preset's ranks: the host backend issues from C++
  // and its compute already runs on the CPU).
  static HostCosts none() { return {}; }
  bool any() const {
    return framework_op_seconds > 0 || list_tensor_seconds > 0 || param_view_seconds > 0 || param_reshard_seconds > 0;
  }
};

// Seconds the CPU thread spends issuing an op with this host work.
double host_seconds(const planner::HostWork& work, const HostCosts& costs);

// The scenario's CPU thread: eager PyTorch's on its GPU preset's host
// (GpuPreset::host_issue_slowdown), none for the nominal CPU rank or when
// `host_issue` is off (`ragged simulate --no-host-path`).
HostCosts host_costs_of(const scenarios::Scenario& scenario, bool host_issue);

}  // namespace ragged::sim
