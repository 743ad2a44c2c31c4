#include "backend/run_trace.hpp"

#include <algorithm>
#include <cmath>

#include "common/units.hpp"
#include "planner/memory_breakdown.hpp"
#include "scenarios/scenario_loader.hpp"
#include "scenarios/scenario_rules.hpp"
#include "traces/metrics.hpp"
#include "traces/trace_metadata.hpp"
#include "traces/trace_names.hpp"

namespace ragged::backend {
namespace {

int64_t ns(double seconds) { return static_cast<int64_t>(std::llround(seconds * 1e9)); }

}  // namespace

traces::Trace measured_trace(const planner::ResolvedScenario& resolved, const planner::Program& program,
                             const std::vector<MeasuredStep>& steps, Communicator& comm, const std::string& device,
                             double device_peak_flops) {
  const scenarios::Scenario& s = resolved.scenario();
  traces::Trace trace;
  traces::Metadata* meta = trace.mutable_metadata();
  traces::stamp_metadata(meta, traces::MEASURED);
  meta->set_scenario_name(s.name());
  meta->set_scenario_text(scenarios::to_text(s));
  meta->set_device(device);
  meta->set_strategy(program.strategy);
  meta->set_world_size(comm.size());
  meta->add_traced_ranks(comm.rank());
  meta->set_steps(static_cast<int32_t>(steps.size()));
  if (steps.empty()) return trace;

  // Every measured step's events, laid end to end: step i starts where step
  // i-1 ended, so the timeline reads as the run went and each event keeps
  // its step index for per-step figures.
  traces::SummaryInputs summary;
  double offset = 0;
  for (size_t i = 0; i < steps.size(); ++i) {
    const MeasuredStep& step = steps[i];
    for (const planner::Op& op : program.ops) {
      const OpTime& t = step.times[op.id];
      traces::Event* e = trace.add_events();
      e->set_op_id(op.id);
      e->set_rank(comm.rank());
      e->set_stream(traces::parse_stream(planner::stream_name(op.stream)).value_or(traces::STREAM_UNSPECIFIED));
      e->set_kind(traces::parse_op_kind(planner::op_kind_name(op.kind)).value_or(traces::OP_KIND_UNSPECIFIED));
      e->set_unit(op.unit);
      e->set_name(op.name);
      e->set_start_ns(ns(offset + t.start));
      e->set_end_ns(std::max(ns(offset + t.end), ns(offset + t.start)));
      e->set_bytes(op.bytes);
      e->set_flops(op.flops);
      e->set_step(static_cast<int32_t>(i));
    }
    for (const MemoryPoint& m : step.memory) {
      traces::MemorySample* sample = trace.add_memory();
      sample->set_rank(comm.rank());
      sample->set_time_ns(ns(offset + m.time));
      sample->set_allocated_bytes(m.allocated);
      sample->set_reserved_bytes(step.reserved_bytes);
      sample->set_state_and_buffers_bytes(m.allocated);  // the executors hold only state and these buffers
    }
    // Durations from the nanosecond events, so that compute + exposed is the
    // step exactly on this basis too.
    const double seconds = static_cast<double>(ns(offset + step.seconds) - ns(offset)) * 1e-9;
    summary.steps.push_back(traces::step_figures(trace, comm.rank(), static_cast<int>(i), seconds));
    summary.peak_allocated_bytes = std::max(summary.peak_allocated_bytes, step.peak_bytes);
    summary.peak_reserved_bytes = std::max(summary.peak_reserved_bytes, step.reserved_bytes);
    summary.peak_state_and_buffers_bytes = std::max(summary.peak_state_and_buffers_bytes, step.peak_state_and_buffers_bytes);
    summary.persistent_bytes = step.persistent_bytes;
    offset += step.seconds;
  }
  summary.issue_order_peak_bytes = planner::issue_order_state_and_buffers_peak(program);
  summary.tokens_per_step = program.tokens_per_step;
  summary.model_flops_per_step = program.model_flops_per_step;
  summary.peak_flops = device_peak_flops > 0 ? device_peak_flops : scenarios::peak_bf16_flops(s.cluster().gpu());
  summary.hbm_capacity_bytes = scenarios::hbm_capacity_bytes(s.cluster().gpu());
  summary.allocator_capacity_bytes = scenarios::allocator_capacity_bytes(s);
  *trace.mutable_summary() = traces::make_summary(summary);
  return trace;
}

std::vector<std::string> host_executor_notes(const planner::Program& program) {
  std::vector<std::string> notes;
  if (program.persistent.compute_params > 0) {
    notes.push_back("the host computes from the fp32 master shard: it does not keep the strategy's persistent "
                    "compute-dtype shard (" + format_bytes(static_cast<double>(program.persistent.compute_params)) +
                    " of the predicted persistent state)");
  }
  if (program.persistent.gathered_small_params > 0) {
    notes.push_back("the host gathers the parameters the strategy keeps gathered for good (below its persistence "
                    "threshold, " + format_bytes(static_cast<double>(program.persistent.gathered_small_params)) +
                    ") with their unit, in the step's buffers");
  }
  return notes;
}

}  // namespace ragged::backend
