#pragma once
// The steps of `ragged run` every device shares: the launch checks, the plan
// and Program of this rank, its shards initialised from the seed, and the
// comparison of the trained parameters with the unsharded reference.

#include <cstdint>
#include <vector>

#include "backend/communicator.hpp"
#include "backend/rank_groups.hpp"
#include "backend/reference.hpp"
#include "backend/run.hpp"
#include "backend/unit_shard.hpp"
#include "models/model_spec.hpp"
#include "planner/plan.hpp"
#include "planner/program.hpp"
#include "planner/resolved_scenario.hpp"

namespace ragged::backend {

// InputError unless as many processes run as the scenario has GPUs.
void check_launch(const planner::ResolvedScenario& resolved, const Communicator& comm);

// The scenario's plan with parameters of `param_dtype` (alignment), and
// InputError when it cuts 8-bit Adam's blocks across ranks.
planner::Plan plan_for_run(const planner::ResolvedScenario& resolved, models::DType param_dtype);

// This rank's shard of every unit, its master initialised from `seed`.
std::vector<UnitShard> make_shards(const models::ModelSpec& model, const planner::Plan& plan, int rank, uint64_t seed);

// Every rank's shards, gathered into whole tensors on every rank.
ModelParams gather_params(std::vector<UnitShard>& shards, Communicator& comm);

// Every rank takes part in the gather over its shard group; world rank 0
// trains the reference for `steps` steps and fills `result`'s reference
// fields. Under HSDP every replica's shards must also equal replica 0's
// bitwise (result.replica_differing; reference_ok is false otherwise).
void judge_against_reference(const planner::ResolvedScenario& resolved, std::vector<UnitShard>& shards,
                             const RankGroups& groups, int64_t steps, const RunOptions& options, RunResult& result);

}  // namespace ragged::backend
