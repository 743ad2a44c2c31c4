#pragma once
// A pipeline's stages over the launched ranks (training.mesh.pp): stage p
// holds world ranks [p * stage_ranks, (p + 1) * stage_ranks), pp outermost
// as in planner/mesh.hpp, and FSDP and HSDP run inside each stage. Without
// stages the world is one stage.

#include <memory>
#include <vector>

#include "backend/communicator.hpp"
#include "backend/rank_groups.hpp"
#include "backend/reference.hpp"
#include "backend/unit_shard.hpp"
#include "planner/resolved_scenario.hpp"
#include "planner/scenario_plan.hpp"

namespace ragged::backend {

struct RunStages {
  int stages = 1;
  int stage = 0;
  int stage_ranks = 1;           // ranks per stage: the data-parallel world
  int place = 0;                 // this rank's place in its stage
  Communicator* comm = nullptr;  // this stage's ranks (the world without stages)
  std::unique_ptr<Communicator> own;
  planner::PipelinePlan pipeline;  // stages > 1: every stage's plan
};

// Splits `world` (every rank calls it); InputError when the pipeline cannot
// run on the host (tied embeddings: the head would read a table another
// stage holds).
RunStages split_stages(const planner::ResolvedScenario& resolved, Communicator& world);

// Every stage's trained parameters, in model order, on world rank 0 (the
// other ranks: empty); each stage's first rank sends its stage's units.
ModelParams gather_stage_params(const planner::ResolvedScenario& resolved, const RunStages& stages,
                                std::vector<UnitShard>& shards, const RankGroups& groups, Communicator& world);

}  // namespace ragged::backend
