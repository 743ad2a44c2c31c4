#include "sim/trace_builder.hpp"

#include <algorithm>
#include <cmath>

#include "common/errors.hpp"
#include "planner/memory_breakdown.hpp"
#include "scenarios/scenario_loader.hpp"
#include "scenarios/scenario_rules.hpp"
#include "traces/metrics.hpp"
#include "traces/trace_metadata.hpp"
#include "traces/trace_names.hpp"
#include "traces/trace_stats.hpp"

namespace ragged::sim {
namespace {

using planner::OpKind;
using planner::Stream;

int64_t to_ns(double seconds) { return static_cast<int64_t>(std::llround(seconds * 1e9)); }

}  // namespace

traces::Trace build_trace(const TraceInputs& in) {
  const planner::Program& program = *in.program;
  const scenarios::Scenario& scenario = in.resolved->scenario();
  traces::Trace trace;

  traces::Metadata* meta = trace.mutable_metadata();
  traces::stamp_metadata(meta, traces::PREDICTED);
  meta->set_scenario_name(scenario.name());
  meta->set_scenario_text(scenarios::to_text(scenario));
  meta->set_device(in.device);
  meta->set_strategy(program.strategy);
  meta->set_world_size(static_cast<int32_t>(scenarios::total_gpus(scenario)));
  // The reported rank first, then a pipeline's other stages.
  struct Timeline {
    const planner::Program* program;
    int32_t rank;
    const std::vector<OpTiming>* timings;
    const std::vector<MemorySample>* memory;
  };
  std::vector<Timeline> timelines;
  int32_t reported = program.rank;
  if (in.stage_programs.empty()) {
    timelines.push_back({&program, program.rank, &in.run->timings, &in.run->memory});
  } else {
    RAGGED_ASSERT(in.stage_programs.size() == in.run->rank_timings.size() && in.stage_ranks.size() == in.stage_programs.size(),
                  "a timeline per stage");
    reported = static_cast<int32_t>(in.stage_ranks[in.run->reported]);
    timelines.push_back({&program, reported, &in.run->timings, &in.run->memory});
    for (size_t r = 0; r < in.stage_programs.size(); ++r) {
      if (r == in.run->reported) continue;
      timelines.push_back({in.stage_programs[r], static_cast<int32_t>(in.stage_ranks[r]), &in.run->rank_timings[r],
                           &in.run->rank_memory[r]});
    }
  }
  meta->set_steps(1);
  for (const Timeline& timeline : timelines) {
    meta->add_traced_ranks(timeline.rank);
    for (const planner::Op& op : timeline.program->ops) {
      const OpTiming& t = (*timeline.timings)[op.id];
      RAGGED_ASSERT(t.end >= t.start && t.start >= 0, "every op of the step must have run: " + op.name);
      traces::Event* e = trace.add_events();
      e->set_op_id(op.id);
      e->set_rank(timeline.rank);
      e->set_stream(traces::parse_stream(planner::stream_name(op.stream)).value_or(traces::STREAM_UNSPECIFIED));
      e->set_kind(traces::parse_op_kind(planner::op_kind_name(op.kind)).value_or(traces::OP_KIND_UNSPECIFIED));
      e->set_unit(op.unit);
      e->set_name(op.name);
      e->set_start_ns(to_ns(t.start));
      e->set_end_ns(to_ns(t.end));
      e->set_bytes(op.bytes);
      e->set_flops(op.flops);
      e->set_step(0);
    }
    for (const MemorySample& m : *timeline.memory) {
      traces::MemorySample* s = trace.add_memory();
      s->set_rank(timeline.rank);
      s->set_time_ns(to_ns(m.time_s));
      s->set_allocated_bytes(m.allocated);
      s->set_reserved_bytes(m.reserved);
      s->set_state_and_buffers_bytes(m.state_and_buffers);
    }
  }

  traces::SummaryInputs summary;
  summary.steps.push_back(traces::step_figures(trace, reported, 0, in.run->step_seconds));
  summary.steps.back().set_pipeline_wait_s(in.run->pipeline_wait_seconds);
  summary.tokens_per_step = program.tokens_per_step;
  summary.model_flops_per_step = program.model_flops_per_step;
  summary.peak_flops = scenarios::peak_bf16_flops(scenario.cluster().gpu());
  summary.hbm_capacity_bytes = scenarios::hbm_capacity_bytes(scenario.cluster().gpu());
  summary.allocator_capacity_bytes = scenarios::allocator_capacity_bytes(scenario);
  summary.peak_allocated_bytes = in.run->peak_allocated;
  summary.peak_reserved_bytes = in.run->peak_reserved;
  summary.peak_state_and_buffers_bytes = in.run->peak_state_and_buffers;
  summary.issue_order_peak_bytes = planner::issue_order_state_and_buffers_peak(program);
  summary.persistent_bytes = program.persistent.total();
  summary.oom = in.run->out_of_memory;
  summary.alloc_retries = in.run->allocator_flushes;
  summary.alloc_retry_s = in.run->allocator_flush_seconds;
  *trace.mutable_summary() = traces::make_summary(summary);
  if (in.resolved != nullptr) trace.mutable_summary()->set_mixture_of_experts(in.resolved->model.arch.is_moe());
  for (size_t s = 0; s < in.stage_programs.size(); ++s) {
    const RankRun& run = in.run->ranks[s];
    traces::StageFigures* stage = trace.mutable_summary()->add_stages();
    stage->set_stage(static_cast<int32_t>(s));
    stage->set_rank(static_cast<int32_t>(in.stage_ranks[s]));
    stage->set_compute_s(traces::step_figures(trace, stage->rank(), 0, run.step_seconds).compute_s());
    stage->set_pipeline_wait_s(run.pipeline_wait_seconds);
    stage->set_end_s(run.step_seconds);
    stage->set_peak_reserved_bytes(run.peak_reserved);
    stage->set_peak_allocated_bytes(run.peak_allocated);
  }
  return trace;
}

}  // namespace ragged::sim
