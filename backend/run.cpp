#include "backend/run.hpp"

#include <fmt/format.h>

#include "backend/build_info.hpp"
#include "backend/collective_check.hpp"
#include "backend/host_executor.hpp"
#include "backend/host_optimizer.hpp"
#include "backend/run_support.hpp"
#include "backend/run_trace.hpp"
#include "backend/workload.hpp"
#include "common/errors.hpp"
#include "planner/memory_breakdown.hpp"
#include "planner/program_builder.hpp"

namespace ragged::backend {
namespace {

void check_host_runnable(const planner::ResolvedScenario& r, const RunOptions& options) {
  if (options.device != "cpu") {
    throw InputError(fmt::format("--device {}: the host backend runs 'cpu'", options.device));
  }
  const auto& p = r.scenario().training().precision();
  if (p.param() != scenarios::FP32 || p.reduce() != scenarios::FP32 || p.master() != scenarios::FP32) {
    throw InputError("the cpu device computes in fp32: set training.precision { param: FP32 reduce: FP32 master: FP32 }");
  }
}

}  // namespace

RunResult run(const planner::ResolvedScenario& resolved, const RunOptions& options, Communicator& comm) {
  check_host_runnable(resolved, options);
  check_launch(resolved, comm);
  const scenarios::Training& training = resolved.scenario().training();
  const planner::Plan plan = plan_for_run(resolved, models::DType::kF32);
  const planner::Program program = planner::build_program(planner::program_inputs(resolved, plan), comm.rank());
  std::vector<UnitShard> shards = make_shards(resolved.model, plan, comm.rank(), options.seed);
  int64_t persistent_bytes = 0;
  for (const UnitShard& s : shards) persistent_bytes += s.shard_size() * 4 * 4;  // master, gradient, two optimizer states
  planner::OptimizerContext context;
  context.model = &resolved.model;
  context.plan = &plan;
  context.optimizer = training.optimizer();
  HostOptimizer optimizer(training.optimizer(), &shards, planner::owned_matrices(context), &comm);
  HostWorkload workload(resolved.model, training.micro_batch_size(), training.sequence_length());
  DataConfig data{options.seed, training.micro_batch_size(), training.sequence_length(), resolved.model.arch.vocab};
  HostExecutor executor(program, shards, optimizer, comm, workload, data, persistent_bytes,
                        head_reads_embedding(resolved.model));

  RunResult result;
  comm.set_ordered_reductions(options.check_reference);
  if (options.verify_collectives) result.collective_errors = self_test(comm, 4099, 1);
  std::vector<MeasuredStep> measured;
  const int64_t total = options.warmup_steps + options.steps;
  for (int64_t step = 1; step <= total; ++step) {
    MeasuredStep s = executor.run_step(step);
    result.losses.push_back(comm.sum(s.loss) / comm.size());
    if (options.verify_collectives) result.collective_errors += self_test(comm, 1000 + step, static_cast<uint64_t>(step + 1));
    if (step > options.warmup_steps) measured.push_back(std::move(s));
  }
  if (options.check_reference) judge_against_reference(resolved, shards, comm, total, options, result);
  result.arena_held_bytes = persistent_bytes + executor.arena_bytes();
  result.program_peak_bytes = planner::memory_breakdown(program).peak_total();
  result.trace = measured_trace(
      resolved, program, measured, comm,
      fmt::format("cpu ({}), {} {} rank{}", build_info(), comm.size(), comm.name(), comm.size() == 1 ? "" : "s"));
  return result;
}

}  // namespace ragged::backend
