#include "backend/run_trace.hpp"

#include <algorithm>
#include <cmath>

#include "scenarios/scenario_loader.hpp"
#include "scenarios/scenario_rules.hpp"
#include "traces/trace_metadata.hpp"
#include "traces/trace_names.hpp"
#include "traces/trace_stats.hpp"

namespace ragged::backend {
namespace {

int64_t ns(double seconds) { return static_cast<int64_t>(std::llround(seconds * 1e9)); }

}  // namespace

traces::Trace measured_trace(const planner::ResolvedScenario& resolved, const planner::Program& program,
                             const std::vector<MeasuredStep>& steps, Communicator& comm, const std::string& device) {
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

  const MeasuredStep& last = steps.back();
  double compute = 0;
  for (const planner::Op& op : program.ops) {
    const OpTime& t = last.times[op.id];
    traces::Event* e = trace.add_events();
    e->set_op_id(op.id);
    e->set_rank(comm.rank());
    e->set_stream(traces::parse_stream(planner::stream_name(op.stream)).value_or(traces::STREAM_UNSPECIFIED));
    e->set_kind(traces::parse_op_kind(planner::op_kind_name(op.kind)).value_or(traces::OP_KIND_UNSPECIFIED));
    e->set_unit(op.unit);
    e->set_name(op.name);
    e->set_start_ns(ns(t.start));
    e->set_end_ns(std::max(ns(t.end), ns(t.start)));
    e->set_bytes(op.bytes);
    e->set_flops(op.flops);
    e->set_step(static_cast<int32_t>(steps.size()) - 1);
    if (op.stream == planner::Stream::kCompute && op.kind != planner::OpKind::kAlloc && op.kind != planner::OpKind::kFree) {
      compute += t.end - t.start;
    }
  }
  for (const MemoryPoint& m : last.memory) {
    traces::MemorySample* sample = trace.add_memory();
    sample->set_rank(comm.rank());
    sample->set_time_ns(ns(m.time));
    sample->set_allocated_bytes(m.allocated);
    sample->set_reserved_bytes(last.reserved_bytes);
  }
  double seconds = 0;
  int64_t peak = 0, reserved = 0;
  for (const MeasuredStep& step : steps) {
    seconds += step.seconds;
    peak = std::max(peak, step.peak_bytes);
    reserved = std::max(reserved, step.reserved_bytes);
  }
  seconds /= static_cast<double>(steps.size());
  traces::Summary* sum = trace.mutable_summary();
  sum->set_step_time_s(seconds);
  sum->set_tokens_per_step(program.tokens_per_step);
  sum->set_tokens_per_s_per_gpu(static_cast<double>(program.tokens_per_step) / seconds);
  sum->set_mfu(program.model_flops_per_step / seconds / (s.cluster().gpu().peak_bf16_tflops() * 1e12));
  sum->set_compute_s(compute);
  sum->set_comm_s(traces::busy_seconds(trace, false));
  // As the simulator counts it: the time the compute stream stands idle
  // within the step, waiting on collectives (or, on a GPU, on launches).
  sum->set_exposed_comm_s(std::max(0.0, last.seconds - traces::busy_seconds(trace, true)));
  sum->set_peak_allocated_bytes(peak);
  sum->set_peak_reserved_bytes(reserved);
  sum->set_hbm_capacity_bytes(static_cast<int64_t>(s.cluster().gpu().hbm_capacity_gib() * 1073741824.0));
  sum->set_oom(false);
  return trace;
}

}  // namespace ragged::backend
