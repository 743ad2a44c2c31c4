#include "backend/run.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "backend/build_info.hpp"
#include "backend/collective_check.hpp"
#include "backend/host_executor.hpp"
#include "backend/host_optimizer.hpp"
#include "backend/run_stages.hpp"
#include "backend/run_support.hpp"
#include "backend/progress.hpp"
#include "backend/run_trace.hpp"
#include "backend/startup_deadline.hpp"
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
  check_optimizer_step(resolved.scenario().training());
  check_host_runnable(resolved, options);
  check_launch(resolved, comm, true);
  check_ranks_agree(resolved, options, comm);
  check_injection(resolved.model, options.inject_nan);
  const scenarios::Training& training = resolved.scenario().training();
  comm.set_ordered_reductions(options.ordered_reductions);
  const std::unique_ptr<Watchdog> watchdog = comm.start_watchdog(options.collective_timeout_s);
  disarm_startup_deadline();  // the watchdog bounds every wait from here
  // FSDP and HSDP inside each pipeline stage (the whole world without stages).
  const RunStages stages = split_stages(resolved, comm);
  const int tp = std::max(1, training.mesh().tp());
  const int cp = std::max(1, training.mesh().cp());
  const int ep = std::max(1, training.mesh().ep());
  const RankGroups groups = split_rank_groups(*stages.comm, training.shard_group_size(), tp, cp, ep);
  const int tp_rank = groups.tensor != nullptr ? groups.tensor->rank() : 0;
  const int cp_rank = groups.context != nullptr ? groups.context->rank() : 0;
  const ExpertPlace experts{groups.expert != nullptr ? groups.expert->rank() : 0,
                            groups.expert_shard != nullptr ? groups.expert_shard->rank() : 0};
  Communicator& shard = *groups.shard;
  const planner::Plan plan = stages.stages > 1 ? stages.pipeline.plans[static_cast<size_t>(stages.stage)]
                                               : plan_for_run(resolved, models::DType::kF32);
  if (stages.stages > 1) check_plan_for_run(resolved, plan);  // plan_for_run checks its own plan
  planner::ProgramInputs inputs = planner::program_inputs(resolved, plan);
  const planner::StageOfPipeline stage{&stages.pipeline.stages, stages.stage, stages.pipeline.schedule};
  if (stages.stages > 1) inputs.pipeline = &stage;
  const planner::Program program = planner::build_program(inputs, shard.rank());
  const ScopedOpNames op_names([&program](int64_t op) { return op_label(program, op); });
  std::vector<UnitShard> shards = make_shards(resolved.model, plan, shard.rank(), options.seed,
                                             tp > 1 || ep > 1 ? &resolved.whole() : nullptr, tp_rank, experts);
  planner::OptimizerContext context;
  context.model = &resolved.model;
  context.plan = &plan;
  context.optimizer = training.optimizer();
  // The optimizer finds a matrix's unit among this rank's shards: the plan's
  // units (a stage's plan holds some of the model's).
  std::vector<planner::OwnedMatrix> owned = planner::owned_matrices(context);
  for (planner::OwnedMatrix& m : owned) {
    for (size_t u = 0; u < plan.units.size(); ++u) {
      if (plan.units[u].unit_index != m.unit) continue;
      m.unit = static_cast<int>(u);
      break;
    }
  }
  HostOptimizer optimizer(training.optimizer(), &shards, std::move(owned), &shard, groups.expert_shard);
  // A stage holds several micro-batches at once (its schedule's): one
  // workload each keeps their activations apart.
  std::vector<std::unique_ptr<HostWorkload>> workloads;
  HostWorkloads host;
  for (int mb = 0; mb < (stages.stages > 1 ? program.micro_batches : 1); ++mb) {
    workloads.push_back(std::make_unique<HostWorkload>(resolved.model, training.micro_batch_size(),
                                                       training.sequence_length(), TensorParallelRank{tp_rank, tp},
                                                       ContextParallelRank{cp_rank, cp},
                                                       ExpertParallelRank{experts.rank, ep}));
    host.per_micro_batch.push_back(workloads.back().get());
  }
  for (const planner::UnitPlan& unit : plan.units) host.model_units.push_back(unit.unit_index);
  host.tied_embeddings = head_reads_embedding(resolved.model);
  if (stages.stages > 1) {
    host.world = &comm;
    host.stage_ranks = stages.stage_ranks;
    host.place = stages.place;
  }
  WalkConfig walk;
  // Token ids over the whole vocabulary (a tp rank holds a share of its rows).
  walk.data = DataConfig{options.seed, training.micro_batch_size(), training.sequence_length(),
                         resolved.whole().arch.vocab};
  // The data-parallel rank: a micro-batch's stages, and a tp group, share its sequences.
  walk.world_rank = groups.reading_rank();
  walk.world_size = groups.reading_ranks();
  walk.token_shares = cp;  // a cp group's ranks read the same sequences, each its chunks
  walk.tied_embeddings = host.tied_embeddings;
  HostExecutor executor(program, shards, optimizer, groups, std::move(host), walk);

  RunResult result;
  result.replicas = groups.replicas->size();
  if (options.verify_collectives) {
    // Every stage's groups, counted once a stage (on its first rank), and the world's.
    const int64_t stage_wrong = self_test_groups(groups, 4099, 1);
    result.collective_errors = stages.stages == 1 ? stage_wrong
                                                  : static_cast<int64_t>(comm.sum(stages.place == 0 ? stage_wrong : 0)) +
                                                        self_test(comm, 4099, 4);
  }
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
  loop.loss_ranks = stages.stage_ranks;  // the last stage's ranks compute the loss
  const StepLoopResult ran = run_step_loop(loop, comm, comm, resolved.model, result);
  if (options.check_reference && !ran.stopped) {
    judge_against_reference(resolved, shards, groups, stages, comm, options.warmup_steps + options.steps, options,
                            result);
  }
  result.arena_held_bytes = ran.persistent_bytes + executor.arena_bytes();
  result.program_peak_bytes = planner::memory_breakdown(program).peak_total();
  result.trace = measured_trace(
      resolved, program, ran.measured, comm,
      fmt::format("cpu ({}), {}", build_info(),
                  stages.stages == 1 ? describe(groups, comm.name())
                                     : fmt::format("{} {} ranks in {} pipeline stages of {}", comm.size(), comm.name(),
                                                   stages.stages, describe(groups, comm.name()))));
  for (const std::string& note : host_executor_notes(program)) result.trace.mutable_metadata()->add_executor_notes(note);
  return result;
}

}  // namespace ragged::backend
