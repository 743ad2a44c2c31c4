#include "backend/run.hpp"

#include <fmt/format.h>

#include "backend/build_info.hpp"
#include "backend/collective_check.hpp"
#include "backend/host_executor.hpp"
#include "backend/host_optimizer.hpp"
#include "backend/run_support.hpp"
#include "backend/progress.hpp"
#include "backend/run_trace.hpp"
#include "backend/step_loop.hpp"
#include "backend/watchdog.hpp"
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

// The self-test on the world and, under HSDP, on the shard groups and the
// replica groups: wrong elements summed over the world.
int64_t self_test_groups(const RankGroups& groups, int64_t count, uint64_t tag) {
  int64_t wrong = self_test(*groups.world, count, tag);
  if (groups.own_shard) {
    const int64_t shard = self_test(*groups.shard, count, tag + 1);
    const int64_t replicas = self_test(*groups.replicas, count, tag + 2);
    // Each group's total is on all its ranks: count it once, on its rank 0.
    wrong += static_cast<int64_t>(groups.world->sum(static_cast<double>((groups.shard->rank() == 0 ? shard : 0) +
                                                                        (groups.replicas->rank() == 0 ? replicas : 0))));
  }
  return wrong;
}

}  // namespace

RunResult run(const planner::ResolvedScenario& resolved, const RunOptions& options, Communicator& comm) {
  check_workload_supported(resolved.model);
  check_update_kernel(resolved.scenario().training());
  check_loop_metrics(resolved.scenario().training());
  check_host_runnable(resolved, options);
  check_launch(resolved, comm);
  check_ranks_agree(resolved, options, comm);
  check_injection(resolved.model, options.inject_nan);
  const scenarios::Training& training = resolved.scenario().training();
  comm.set_ordered_reductions(options.ordered_reductions);
  const RankGroups groups = split_rank_groups(comm, training.shard_group_size());
  Communicator& shard = *groups.shard;
  const planner::Plan plan = plan_for_run(resolved, models::DType::kF32);
  const planner::Program program = planner::build_program(planner::program_inputs(resolved, plan), shard.rank());
  const ScopedOpNames op_names([&program](int64_t op) { return op_label(program, op); });
  const std::unique_ptr<Watchdog> watchdog = groups.world->start_watchdog(options.collective_timeout_s);
  std::vector<UnitShard> shards = make_shards(resolved.model, plan, shard.rank(), options.seed);
  planner::OptimizerContext context;
  context.model = &resolved.model;
  context.plan = &plan;
  context.optimizer = training.optimizer();
  HostOptimizer optimizer(training.optimizer(), &shards, planner::owned_matrices(context), &shard);
  HostWorkload workload(resolved.model, training.micro_batch_size(), training.sequence_length());
  WalkConfig walk;
  walk.data = DataConfig{options.seed, training.micro_batch_size(), training.sequence_length(), resolved.model.arch.vocab};
  walk.world_rank = groups.world->rank();
  walk.world_size = groups.world->size();
  walk.tied_embeddings = head_reads_embedding(resolved.model);
  HostExecutor executor(program, shards, optimizer, groups, workload, walk);

  RunResult result;
  result.replicas = groups.replicas->size();
  if (options.verify_collectives) result.collective_errors = self_test_groups(groups, 4099, 1);
  StepLoop loop;
  loop.warmup_steps = options.warmup_steps;
  loop.steps = options.steps;
  loop.run_step = [&executor](int64_t step) { return executor.run_step(step); };
  loop.after_step = [&](int64_t step) {
    if (options.verify_collectives) result.collective_errors += self_test(comm, 1000 + step, static_cast<uint64_t>(step + 1));
    inject_nan(resolved.model, options.inject_nan, step, shards);
  };
  loop.state_non_finite = [&]() -> std::optional<NonFinite> {
    std::optional<NonFinite> found = first_non_finite_master(shards);
    for (int u = 0; u < static_cast<int>(shards.size()) && !found; ++u) found = optimizer.first_non_finite_state(u);
    return found;
  };
  const StepLoopResult ran = run_step_loop(loop, comm, *groups.world, resolved.model, result);
  if (options.check_reference && !ran.stopped) {
    judge_against_reference(resolved, shards, groups, options.warmup_steps + options.steps, options, result);
  }
  result.arena_held_bytes = ran.persistent_bytes + executor.arena_bytes();
  result.program_peak_bytes = planner::memory_breakdown(program).peak_total();
  result.trace = measured_trace(
      resolved, program, ran.measured, comm,
      fmt::format("cpu ({}), {}", build_info(), describe(groups, comm.name())));
  for (const std::string& note : host_executor_notes(program)) result.trace.mutable_metadata()->add_executor_notes(note);
  return result;
}

}  // namespace ragged::backend
