#include "backend/run.hpp"

#include <fmt/format.h>

#include "backend/collective_check.hpp"
#include "backend/host_executor.hpp"
#include "backend/host_optimizer.hpp"
#include "backend/reference.hpp"
#include "backend/run_trace.hpp"
#include "backend/unit_shard.hpp"
#include "backend/workload.hpp"
#include "common/errors.hpp"
#include "planner/program_builder.hpp"
#include "scenarios/scenario_rules.hpp"

namespace ragged::backend {
namespace {

void check_runnable(const planner::ResolvedScenario& r, const RunOptions& options, const Communicator& comm) {
  const scenarios::Scenario& s = r.scenario();
  if (options.device != "cpu") {
    throw InputError(fmt::format("--device {}: this build runs on the host only ('cpu'); the CUDA/NCCL backend is not "
                                 "built yet", options.device));
  }
  if (scenarios::total_gpus(s) != comm.size()) {
    throw InputError(fmt::format("{} has {} GPUs but {} process{} run: launch `mpirun -np {}` or pass --gpus {}",
                                 s.name(), scenarios::total_gpus(s), comm.size(), comm.size() == 1 ? "" : "es",
                                 scenarios::total_gpus(s), comm.size()));
  }
  if (s.training().replicate_group_size() > 1) {
    throw InputError("training.replicate_group_size > 1 (HSDP) is not supported by the host backend yet");
  }
  const auto& p = s.training().precision();
  if (p.param() != scenarios::FP32 || p.reduce() != scenarios::FP32 || p.master() != scenarios::FP32) {
    throw InputError("the cpu device computes in fp32: set training.precision { param: FP32 reduce: FP32 master: FP32 }");
  }
}

// Every rank's shards, gathered into whole tensors on every rank.
ModelParams gather_params(std::vector<UnitShard>& shards, Communicator& comm) {
  ModelParams params;
  for (UnitShard& s : shards) {
    std::vector<float> buffer(static_cast<size_t>(s.shard_size() * s.ranks()));
    std::copy(s.master().begin(), s.master().end(), buffer.begin() + s.rank() * s.shard_size());
    comm.all_gather_in_place(buffer.data(), s.shard_size());
    std::vector<float> per_tensor;
    const float* base = buffer.data();
    if (!s.contiguous()) {
      per_tensor.resize(static_cast<size_t>(s.unsharded_elements()));
      s.copy_out(buffer.data(), per_tensor.data());
      base = per_tensor.data();
    }
    const auto pointers = s.params_in(base, !s.contiguous());
    for (size_t t = 0; t < s.spec().tensors.size(); ++t) {
      params.emplace_back(pointers[t], pointers[t] + s.spec().tensors[t].numel());
    }
  }
  return params;
}

}  // namespace

RunResult run(const planner::ResolvedScenario& resolved, const RunOptions& options, Communicator& comm) {
  check_runnable(resolved, options, comm);
  const scenarios::Training& training = resolved.scenario().training();
  planner::PlanOptions plan_options;
  plan_options.param_dtype = models::DType::kF32;
  auto strategy = planner::make_strategy(training.strategy());
  const planner::Plan plan =
      planner::plan_model(resolved.model, resolved.granularity, training.shard_group_size(), *strategy, plan_options);
  const planner::Program program = planner::build_program(planner::program_inputs(resolved, plan), comm.rank());
  if (training.optimizer().has_adam8bit() && !plan.honours_granularity()) {
    throw InputError(fmt::format(
        "{} cuts 8-bit Adam's blocks across ranks at {} ranks (its shards do not fall on block boundaries), so no rank "
        "could quantise its blocks alone: use the ragged strategy, or a rank count whose shards align",
        plan.strategy, comm.size()));
  }

  std::vector<UnitShard> shards;
  int64_t tensor_id = 0, persistent_bytes = 0;
  for (const planner::UnitPlan& unit : plan.units) {
    shards.emplace_back(resolved.model.units[static_cast<size_t>(unit.unit_index)], unit, comm.rank(), tensor_id);
    shards.back().initialise(options.seed);
    tensor_id += static_cast<int64_t>(resolved.model.units[static_cast<size_t>(unit.unit_index)].tensors.size());
    persistent_bytes += unit.layout.shard_size * 4 * 4;  // master, gradient, two optimizer states
  }
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
  if (options.check_reference) {
    // Every rank takes part in the gather; rank 0 trains the reference and judges.
    ModelParams trained = gather_params(shards, comm);
    if (comm.rank() != 0) {
      result.trace = measured_trace(resolved, program, measured, comm);
      return result;
    }
    ModelParams reference = reference_train(resolved.model, training, comm.size(), total, options.seed);
    ParamError e = compare_params(resolved.model, trained, reference);
    result.reference_error = e.max_relative;
    result.reference_differing = e.differing_elements;
    result.reference_elements = e.elements;
    result.worst_tensor = e.worst_tensor;
    result.reference_ok = e.max_relative <= options.tolerance;
  }
  result.trace = measured_trace(resolved, program, measured, comm);
  return result;
}

}  // namespace ragged::backend
