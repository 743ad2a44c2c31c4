#include "backend/run_stages.hpp"

#include <fmt/format.h>

#include <map>
#include <utility>

#include "backend/run_support.hpp"
#include "backend/workload.hpp"
#include "common/errors.hpp"

namespace ragged::backend {

RunStages split_stages(const planner::ResolvedScenario& resolved, Communicator& world) {
  RunStages out;
  out.stages = static_cast<int>(resolved.scenario().training().mesh().pp());
  out.stage_ranks = world.size() / out.stages;
  if (out.stages <= 1) {
    out.comm = &world;
    out.place = world.rank();
    return out;
  }
  if (head_reads_embedding(resolved.model)) {
    throw InputError("training.mesh.pp: the model ties its head to the embedding table, which another stage holds; "
                     "the host runs pipeline stages of untied models (or set pp: 1)");
  }
  out.stage = world.rank() / out.stage_ranks;
  out.place = world.rank() % out.stage_ranks;
  out.own = world.split(out.stage, out.place);
  out.comm = out.own.get();
  out.pipeline = planner::plan_pipeline(resolved);
  return out;
}

ModelParams gather_stage_params(const planner::ResolvedScenario& resolved, const RunStages& stages,
                                std::vector<UnitShard>& shards, const RankGroups& groups, Communicator& world) {
  ModelParams mine = gather_params(shards, *groups.shard);
  if (stages.stages <= 1) return world.rank() == 0 ? std::move(mine) : ModelParams{};
  if (stages.place == 0 && stages.stage > 0) {
    for (size_t t = 0; t < mine.size(); ++t) {
      world.send(mine[t].data(), static_cast<int64_t>(mine[t].size()), 0, static_cast<int64_t>(t));
    }
    world.wait_sends();
  }
  if (world.rank() != 0) return {};
  // Each stage's tensors in its plan's unit order, filed under their model unit.
  const models::ModelSpec& model = resolved.model;
  std::map<int, std::vector<std::vector<float>>> by_unit;
  for (int s = 0; s < stages.stages; ++s) {
    size_t next = 0;
    for (const planner::UnitPlan& unit : stages.pipeline.plans[static_cast<size_t>(s)].units) {
      std::vector<std::vector<float>>& tensors = by_unit[unit.unit_index];
      for (const models::TensorSpec& t : model.units[static_cast<size_t>(unit.unit_index)].tensors) {
        if (s == 0) {
          tensors.push_back(std::move(mine[next++]));
          continue;
        }
        std::vector<float>& values = tensors.emplace_back(static_cast<size_t>(t.numel()));
        world.recv(values.data(), t.numel(), s * stages.stage_ranks, static_cast<int64_t>(next++));
      }
    }
  }
  RAGGED_ASSERT(static_cast<size_t>(by_unit.size()) == model.units.size(), "every model unit is on one stage");
  ModelParams params;
  for (auto& [unit, tensors] : by_unit) {
    for (std::vector<float>& t : tensors) params.push_back(std::move(t));
  }
  return params;
}

}  // namespace ragged::backend
