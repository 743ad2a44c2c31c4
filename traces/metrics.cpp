#include "traces/metrics.hpp"

#include <algorithm>
#include <cmath>

#include "traces/trace_stats.hpp"

namespace ragged::traces {

double tokens_per_s_per_gpu(int64_t tokens_per_step, double step_s) {
  return step_s > 0 ? static_cast<double>(tokens_per_step) / step_s : 0;
}

double mfu(double model_flops_per_step, double step_s, double peak_flops) {
  return step_s > 0 && peak_flops > 0 ? model_flops_per_step / step_s / peak_flops : 0;
}

StepFigures step_figures(const Trace& trace, int rank, int step, double step_s) {
  StepFigures f;
  f.set_step_time_s(step_s);
  f.set_compute_s(busy_seconds(trace, true, rank, step));
  f.set_comm_s(busy_seconds(trace, false, rank, step));
  // Clamped only against rounding: the compute stream's events lie inside the step.
  f.set_exposed_comm_s(std::max(0.0, step_s - f.compute_s()));
  return f;
}

Summary make_summary(const SummaryInputs& in) {
  Summary s;
  double step = 0, compute = 0, comm = 0, exposed = 0, pipeline = 0;
  for (const StepFigures& f : in.steps) {
    *s.add_per_step() = f;
    step += f.step_time_s();
    compute += f.compute_s();
    comm += f.comm_s();
    exposed += f.exposed_comm_s();
    pipeline += f.pipeline_wait_s();
  }
  const double n = in.steps.empty() ? 1.0 : static_cast<double>(in.steps.size());
  s.set_step_time_s(step / n);
  s.set_compute_s(compute / n);
  s.set_comm_s(comm / n);
  s.set_exposed_comm_s(exposed / n);
  s.set_pipeline_wait_s(pipeline / n);
  s.set_tokens_per_step(in.tokens_per_step);
  s.set_tokens_per_s_per_gpu(tokens_per_s_per_gpu(in.tokens_per_step, s.step_time_s()));
  s.set_mfu(mfu(in.model_flops_per_step, s.step_time_s(), in.peak_flops));
  s.set_hbm_capacity_bytes(in.hbm_capacity_bytes);
  s.set_allocator_capacity_bytes(in.allocator_capacity_bytes);
  s.set_peak_allocated_bytes(in.peak_allocated_bytes);
  s.set_peak_reserved_bytes(in.peak_reserved_bytes);
  s.set_peak_state_and_buffers_bytes(in.peak_state_and_buffers_bytes);
  s.set_issue_order_peak_bytes(in.issue_order_peak_bytes);
  s.set_persistent_bytes(in.persistent_bytes);
  s.set_oom(in.oom);
  s.set_alloc_retries(in.alloc_retries);
  s.set_alloc_retry_s(in.alloc_retry_s);
  return s;
}

Spread step_time_spread(const Summary& summary) {
  Spread out;
  if (summary.per_step().empty()) {
    out.mean = out.min = out.max = summary.step_time_s();
    return out;
  }
  out.min = out.max = summary.per_step(0).step_time_s();
  double sum = 0;
  for (const StepFigures& f : summary.per_step()) {
    out.min = std::min(out.min, f.step_time_s());
    out.max = std::max(out.max, f.step_time_s());
    sum += f.step_time_s();
  }
  const double n = static_cast<double>(summary.per_step_size());
  out.mean = sum / n;
  double squares = 0;
  for (const StepFigures& f : summary.per_step()) squares += (f.step_time_s() - out.mean) * (f.step_time_s() - out.mean);
  out.stddev = std::sqrt(squares / n);
  return out;
}

int64_t allocator_capacity_of(const Summary& summary) {
  return summary.allocator_capacity_bytes() > 0 ? summary.allocator_capacity_bytes() : summary.hbm_capacity_bytes();
}

bool fits_tightly(int64_t peak_reserved_bytes, int64_t allocator_capacity_bytes, bool oom) {
  if (oom || allocator_capacity_bytes <= 0) return false;
  return static_cast<double>(peak_reserved_bytes) / (1 - kPeakMemoryPredictionError) >
         static_cast<double>(allocator_capacity_bytes);
}

bool fits_tightly(const Summary& predicted) {
  return fits_tightly(predicted.peak_reserved_bytes(), allocator_capacity_of(predicted), predicted.oom());
}

bool oom_marginally(int64_t peak_reserved_bytes, int64_t allocator_capacity_bytes, bool oom) {
  if (!oom || allocator_capacity_bytes <= 0) return false;
  return static_cast<double>(peak_reserved_bytes) * (1 - kPeakMemoryPredictionError) <=
         static_cast<double>(allocator_capacity_bytes);
}

bool oom_marginally(const Summary& predicted) {
  return oom_marginally(predicted.peak_reserved_bytes(), allocator_capacity_of(predicted), predicted.oom());
}

std::string memory_verdict(const Summary& predicted) {
  if (predicted.oom()) return oom_marginally(predicted) ? "OOM, marginally" : "OOM";
  return fits_tightly(predicted) ? "fits, tightly" : "fits";
}

}  // namespace ragged::traces
