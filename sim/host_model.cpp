#include "sim/host_model.hpp"

#include "scenarios/gpu_presets.hpp"

namespace ragged::sim {

// - A framework op, derived: torch.mm on 1024^3 bf16 matrices called back to
//   back on an H100 runs at 176.6 TFLOP/s (zzc0721/torch-performance-test-data
//   issue #79, the compute table's source [1]), 12.2 us per call, while the
//   kernel needs about 3 us at the rate of the larger shapes: the call is
//   bound by its host path (Python, the dispatcher, the launch).
// - A tensor of a foreach list, measured: FSDP2's native copy preparation
//   for the 128 slices of a [128, F, D] parameter takes 104 us on the CPU
//   (pytorch PR #197701, ../shared/reference/baselines.md section 6).
// - A parameter's views, measured: FSDP1 with 400 parameters in one unit
//   spends 4.268 ms setting up the unsharded views (_use_unsharded_views) and
//   2.7-2.8 ms restoring the sharded ones (_use_sharded_views) per call
//   (pytorch PR #96958).
// - Another host: every cost scaled by its slowdown (GpuPreset::host_issue_slowdown).
HostCosts HostCosts::pytorch_eager(double slowdown) {
  HostCosts c;
  c.framework_op_seconds = slowdown * 2.0 * 1024.0 * 1024.0 * 1024.0 / 176.62e12;
  c.list_tensor_seconds = slowdown * 104e-6 / 128.0;
  c.param_view_seconds = slowdown * 4.268e-3 / 400.0;
  c.param_reshard_seconds = slowdown * 2.75e-3 / 400.0;
  return c;
}

double host_seconds(const planner::HostWork& w, const HostCosts& c) {
  return static_cast<double>(w.framework_ops) * c.framework_op_seconds +
         static_cast<double>(w.list_tensors) * c.list_tensor_seconds +
         static_cast<double>(w.param_views) * c.param_view_seconds +
         static_cast<double>(w.param_reshards) * c.param_reshard_seconds;
}

HostCosts host_costs_of(const scenarios::Scenario& scenario, bool host_issue) {
  const std::string& name = scenario.cluster().gpu().preset();
  if (!host_issue || scenarios::is_host_rank(name)) return HostCosts::none();
  const scenarios::GpuPreset* preset = scenarios::gpu_preset_or_null(name);
  return HostCosts::pytorch_eager(preset != nullptr ? preset->host_issue_slowdown : 1.0);
}

}  // namespace ragged::sim
