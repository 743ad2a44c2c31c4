#include "backend/run_support.hpp"

#include <fmt/format.h>

#include <cstring>

#include "backend/host_optimizer.hpp"
#include "common/errors.hpp"
#include "planner/dbuffer.hpp"
#include "planner/layout_strategy.hpp"
#include "scenarios/scenario_rules.hpp"

namespace ragged::backend {

void check_launch(const planner::ResolvedScenario& resolved, const Communicator& comm) {
  const scenarios::Scenario& s = resolved.scenario();
  if (scenarios::total_gpus(s) != comm.size()) {
    throw InputError(fmt::format("{} has {} GPUs but {} process{} run: launch `mpirun -np {}` or pass --gpus {}",
                                 s.name(), scenarios::total_gpus(s), comm.size(), comm.size() == 1 ? "" : "es",
                                 scenarios::total_gpus(s), comm.size()));
  }
}

namespace {

// Every rank's piece of every 8-bit Adam matrix must start at a tile row, so
// that each rank quantises whole tiles alone; the block granularity (the
// default with 8-bit Adam) guarantees it, a finer one may not.
void check_adam8bit_tiles(const models::ModelSpec& model, const planner::Plan& plan, const scenarios::Optimizer& o) {
  for (const planner::UnitPlan& unit : plan.units) {
    const models::UnitSpec& spec = model.units[static_cast<size_t>(unit.unit_index)];
    for (int64_t rank = 0; rank < plan.ranks; ++rank) {
      for (const planner::ShardView& view : planner::shard_views(unit.problem, unit.layout, rank)) {
        const models::TensorSpec& t = spec.tensors[static_cast<size_t>(view.tensor)];
        if (tensor_rule(o, t) != TensorRule::kAdam8bit) continue;
        const Adam8bitTiles tiles = adam8bit_tiles(o, t);
        if (starts_tile_row(tiles, view.tensor_offset)) continue;
        throw InputError(fmt::format(
            "training.granularity: the {} layout starts rank {}'s piece of {} at element {}, inside a band of 8-bit "
            "Adam's {}x{} tiles, so no rank could quantise its tiles alone; use granularity block:{}x{} (the default "
            "with adam8bit) or a multiple of it",
            plan.strategy, rank, t.name, view.tensor_offset, tiles.rows, tiles.cols, tiles.rows, tiles.cols));
      }
    }
  }
}

}  // namespace

planner::Plan plan_for_run(const planner::ResolvedScenario& resolved, models::DType param_dtype) {
  const scenarios::Training& training = resolved.scenario().training();
  planner::PlanOptions plan_options;
  plan_options.param_dtype = param_dtype;
  auto strategy = planner::make_strategy(training.strategy());
  planner::Plan plan =
      planner::plan_model(resolved.model, resolved.granularity, training.shard_group_size(), *strategy, plan_options);
  if (training.optimizer().has_adam8bit() && !plan.honours_granularity()) {
    throw InputError(fmt::format(
        "{} cuts 8-bit Adam's blocks across ranks at {} ranks (its shards do not fall on block boundaries), so no rank "
        "could quantise its blocks alone: use the ragged strategy, or a rank count whose shards align",
        plan.strategy, plan.ranks));
  }
  if (training.optimizer().has_adam8bit()) check_adam8bit_tiles(resolved.model, plan, training.optimizer());
  return plan;
}

std::vector<UnitShard> make_shards(const models::ModelSpec& model, const planner::Plan& plan, int rank, uint64_t seed) {
  std::vector<UnitShard> shards;
  shards.reserve(plan.units.size());
  int64_t tensor_id = 0;
  for (const planner::UnitPlan& unit : plan.units) {
    const models::UnitSpec& spec = model.units[static_cast<size_t>(unit.unit_index)];
    shards.emplace_back(spec, unit, rank, tensor_id);
    shards.back().initialise(seed);
    tensor_id += static_cast<int64_t>(spec.tensors.size());
  }
  return shards;
}

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

namespace {

// Elements of this rank's master shards that differ bitwise from replica 0's,
// summed over the world.
int64_t replica_differences(std::vector<UnitShard>& shards, const RankGroups& groups) {
  int64_t differing = 0;
  Communicator& replicas = *groups.replicas;
  if (replicas.size() > 1) {
    for (UnitShard& s : shards) {
      const auto n = static_cast<size_t>(s.shard_size());
      std::vector<float> all(n * static_cast<size_t>(replicas.size()));
      std::copy(s.master().begin(), s.master().end(), all.begin() + static_cast<std::ptrdiff_t>(n) * replicas.rank());
      replicas.all_gather_in_place(all.data(), s.shard_size());
      for (size_t e = 0; e < n; ++e) {
        differing += std::memcmp(&all[e], &s.master()[e], sizeof(float)) != 0 ? 1 : 0;
      }
    }
  }
  return static_cast<int64_t>(groups.world->sum(static_cast<double>(differing)));
}

}  // namespace

void judge_against_reference(const planner::ResolvedScenario& resolved, std::vector<UnitShard>& shards,
                             const RankGroups& groups, int64_t steps, const RunOptions& options, RunResult& result) {
  result.replica_differing = replica_differences(shards, groups);
  ModelParams trained = gather_params(shards, *groups.shard);
  if (groups.world->rank() != 0) return;
  const scenarios::Training& training = resolved.scenario().training();
  ModelParams reference = reference_train(resolved.model, training, groups.world->size(),
                                          groups.shard->size(), steps, options.seed);
  ParamError e = compare_params(resolved.model, trained, reference);
  result.reference_error = e.max_relative;
  result.reference_differing = e.differing_elements;
  result.reference_elements = e.elements;
  result.worst_tensor = e.worst_tensor;
  result.reference_ok = e.max_relative <= options.tolerance && result.replica_differing == 0;
}

}  // namespace ragged::backend
